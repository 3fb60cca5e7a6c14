package deployment_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
)

// finishedCounter is a workqueue.Metrics that counts finished items.
type finishedCounter struct {
	mu   sync.Mutex
	n    int
	cond *sync.Cond
}

func newFinishedCounter() *finishedCounter {
	f := &finishedCounter{}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *finishedCounter) Added(int)                  {}
func (f *finishedCounter) Started(int, time.Duration) {}
func (f *finishedCounter) Retried()                   {}
func (f *finishedCounter) Finished(int, time.Duration) {
	f.mu.Lock()
	f.n++
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *finishedCounter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// waitFor waits until at least n items have finished.
func (f *finishedCounter) waitFor(t *testing.T, n int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		f.mu.Lock()
		for f.n < n {
			f.cond.Wait()
		}
		f.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d items finished within 10s; want %d", f.count(), n)
	}
}

// The controller does not sync a Deployment again from a cached version
// its own last sync replaced: it waits for the write's event. Upstream
// syncs at once and its status write fails with Conflict.
func TestControllerWaitsForItsOwnWrites(t *testing.T) {
	w := newWorld()
	d := w.addDeployment(newDeployment(2, "web:v1"))
	key := deployment.KeyOf(d)
	var conflicts []string
	client := conflictCounter{world: w, conflicts: &conflicts}

	dInf, dw := source(d)
	rsInf, rsw := source[*appsv1.ReplicaSet]()
	podInf, _ := source[*corev1.Pod]()
	done := newFinishedCounter()
	c, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Client: client, Events: w,
		Clock: clock.NewFake(t0), Metrics: done,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{dInf.Run, rsInf.Run, podInf.Run, c.Run} {
		wg.Go(func() { _ = run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	// First sync: the ReplicaSet is created and the status written.
	done.waitFor(t, 1)
	writes := func() []string {
		w.mu.Lock()
		defer w.mu.Unlock()
		return append([]string(nil), w.writes...)
	}
	first := writes()
	if len(first) != 2 || !strings.HasPrefix(first[0], "create ") || first[1] != "update-status web" {
		t.Fatalf("first sync wrote %q; want a create and the status", first)
	}

	// The ReplicaSet's event arrives, with its pods available, before the
	// event of the status write: the Deployment is enqueued, but its
	// cached copy is the version the status write replaced.
	w.settle()
	var rs *appsv1.ReplicaSet
	for _, x := range w.rss {
		rs = x.DeepCopy()
	}
	rsw.Add(rs)
	done.waitFor(t, 2)
	if got := writes(); len(got) != len(first) {
		t.Errorf("a sync on the replaced version wrote %q", got[len(first):])
	}

	// The status write's event arrives: now the sync runs, and writes the
	// new availability on the current version.
	cur, err := w.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	dw.Modify(cur)
	done.waitFor(t, 3)
	got := writes()
	if len(got) != len(first)+1 || got[len(first)] != "update-status web" {
		t.Errorf("writes after the event = %q; want one more status write", got[len(first):])
	}
	if len(conflicts) > 0 {
		t.Errorf("conflicts: %q", conflicts)
	}
	if d, _ := w.Get(key); d.Status.AvailableReplicas != 2 {
		t.Errorf("availableReplicas = %d; want 2", d.Status.AvailableReplicas)
	}
}

// conflictCounter is the world as a deployment.Client, recording the
// writes answered Conflict.
type conflictCounter struct {
	*world
	conflicts *[]string
}

func (c conflictCounter) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	out, err := c.world.UpdateDeploymentStatus(ctx, d)
	if apierrors.IsConflict(err) {
		*c.conflicts = append(*c.conflicts, "update-status "+d.Name)
	}
	return out, err
}

// noopStatus is the world, except that status writes change nothing and
// return the Deployment as sent (same resourceVersion), as an apiserver
// does for an update that changes nothing.
type noopStatus struct {
	*world
	mu    sync.Mutex
	calls int
}

func (n *noopStatus) UpdateDeploymentStatus(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	n.mu.Lock()
	n.calls++
	n.mu.Unlock()
	return d.DeepCopy(), nil
}

func (n *noopStatus) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls
}

// A write that stored no new version sends no event, so the controller
// must not wait for one: the next event syncs the Deployment.
func TestControllerDoesNotWaitForNoopWrites(t *testing.T) {
	w := newWorld()
	d := w.addDeployment(newDeployment(2, "web:v1"))
	client := &noopStatus{world: w}
	dInf, _ := source(d)
	rsInf, rsw := source[*appsv1.ReplicaSet]()
	podInf, _ := source[*corev1.Pod]()
	done := newFinishedCounter()
	c, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Client: client, Events: w,
		Clock: clock.NewFake(t0), Metrics: done,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{dInf.Run, rsInf.Run, podInf.Run, c.Run} {
		wg.Go(func() { _ = run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	done.waitFor(t, 1) // creates the ReplicaSet, "writes" the status
	if n := client.count(); n != 1 {
		t.Fatalf("status writes after the first sync = %d; want 1", n)
	}
	w.settle()
	for _, rs := range w.rss {
		rsw.Add(rs.DeepCopy()) // now available: the status must be written again
	}
	done.waitFor(t, 2)
	if n := client.count(); n != 2 {
		t.Errorf("status writes after the ReplicaSet's event = %d; want 2 (the sync waited for an event that cannot come)", n)
	}
}
