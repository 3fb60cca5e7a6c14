package memcluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/internal/gate"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// recordingGate lets every step through at once and remembers it.
type recordingGate struct {
	mu    sync.Mutex
	steps []string
}

func (g *recordingGate) Enter(_ context.Context, s gate.Step) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.steps = append(g.steps, s.String())
	return nil
}

func (g *recordingGate) taken() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.steps...)
}

func TestGateSeesEveryStep(t *testing.T) {
	g := &recordingGate{}
	c := New(Config{Clock: clock.NewFake(t0), Seed: 1, Gate: g})
	ctx := ctxT(t)
	w, err := c.Pods("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: c.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p := must(c.Pods("ns").Create(ctx, pod("a", "", ""), metav1.CreateOptions{}))(t)
	ev := <-w.ResultChan() // the delivery passed the gate before it arrived
	if ev.Type != watch.Added {
		t.Fatalf("watch event = %s; want ADDED", ev.Type)
	}
	must(c.Pods("ns").Get(ctx, "a", metav1.GetOptions{}))(t)
	if _, _, err := c.Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"watch pods ns/",
		"create pods ns/a",
		fmt.Sprintf("deliver ADDED pods@%s to watch 1", p.ResourceVersion),
		"get pods ns/a",
		"list pods ",
	}
	if diff := cmp.Diff(want, g.taken()); diff != "" {
		t.Errorf("steps at the gate mismatch (-want +got):\n%s", diff)
	}
}

// closedGate refuses every step as a gate does whose context ended.
type closedGate struct{}

func (closedGate) Enter(context.Context, gate.Step) error { return context.Canceled }

func TestGateRefusalStopsTheStep(t *testing.T) {
	c := New(Config{Clock: clock.NewFake(t0), Seed: 1, Gate: closedGate{}})
	_, err := c.Pods("ns").Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Create() through a refusing gate: error = %v; want context.Canceled", err)
	}
	c.cfg.Gate = nil // look behind the gate: nothing was stored
	pods, _, err := c.Pods("ns").List(ctxT(t), metav1.ListOptions{})
	if err != nil || len(pods) != 0 {
		t.Fatalf("after a refused Create, List() = %d pods, %v; want none", len(pods), err)
	}
}

func TestOnWriteSeesWritesInOrder(t *testing.T) {
	var got []string
	c := New(Config{Clock: clock.NewFake(t0), Seed: 1, OnWrite: func(w Write) {
		got = append(got, fmt.Sprintf("%s %s %s/%s rv=%d", w.Type, w.Resource, w.Object.GetNamespace(), w.Object.GetName(), w.ResourceVersion))
	}})
	ctx := ctxT(t)
	p := must(c.Pods("ns").Create(ctx, pod("a", "", ""), metav1.CreateOptions{}))(t)
	p.Labels["v"] = "2"
	p = must(c.Pods("ns").Update(ctx, p, metav1.UpdateOptions{}))(t)
	if err := c.Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("ADDED pods ns/a rv=%d", 2), // a fresh cluster is at 1, as a fresh etcd
		fmt.Sprintf("MODIFIED pods ns/a rv=%s", p.ResourceVersion),
		// An unbound pod goes at once, after a write of its deletionTimestamp (as kube-apiserver does).
		fmt.Sprintf("MODIFIED pods ns/a rv=%d", 4),
		fmt.Sprintf("DELETED pods ns/a rv=%d", 5),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writes told to OnWrite mismatch (-want +got):\n%s", diff)
	}
}

func TestNoGarbageCollection(t *testing.T) {
	c := New(Config{Clock: clock.NewFake(t0), Seed: 1, NoGarbageCollection: true})
	ctx := ctxT(t)
	d := must(c.Deployments("ns").Create(ctx, deployment("web"), metav1.CreateOptions{}))(t)
	rs := must(c.ReplicaSets("ns").Create(ctx, replicaSet("web", d), metav1.CreateOptions{}))(t)
	must(c.Pods("ns").Create(ctx, pod("p", "web", rs.UID), metav1.CreateOptions{}))(t)
	must(c.Pods("ns").Create(ctx, pod("orphan", "gone", "no-such-uid"), metav1.CreateOptions{}))(t)
	if err := c.Deployments("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"rs/web <web", "pod/orphan <gone", "pod/p <web"} // owners gone, dependents kept
	if diff := cmp.Diff(want, world(t, c)); diff != "" {
		t.Errorf("world without garbage collection mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteOfNilObjectIsBadRequest(t *testing.T) {
	c, _ := newTestCluster(t)
	if _, err := c.Pods("ns").Create(ctxT(t), nil, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("Create(nil) error = %v; want BadRequest", err)
	}
	if _, err := c.Pods("ns").Update(ctxT(t), nil, metav1.UpdateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("Update(nil) error = %v; want BadRequest", err)
	}
	if _, err := c.Pods("ns").UpdateStatus(ctxT(t), nil, metav1.UpdateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("UpdateStatus(nil) error = %v; want BadRequest", err)
	}
}

// expiringGate expires every watch at its first delivery.
type expiringGate struct{}

func (expiringGate) Enter(_ context.Context, s gate.Step) error {
	if s.Kind == gate.StepDelivery {
		return gate.ErrWatchExpired
	}
	return nil
}

func TestGateExpiresAWatch(t *testing.T) {
	c := New(Config{Clock: clock.NewFake(t0), Seed: 1, Gate: expiringGate{}})
	ctx := ctxT(t)
	w, err := c.Pods("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: c.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p := must(c.Pods("ns").Create(ctx, pod("a", "", ""), metav1.CreateOptions{}))(t)
	ev, ok := <-w.ResultChan()
	if !ok || ev.Type != watch.Error {
		t.Fatalf("first event = %v %v; want an ERROR event", ev.Type, ok)
	}
	if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) {
		t.Fatalf("ERROR event = %v; want 410 Expired", err)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("the watch went on after its 410")
	}
	// The object is stored: only the watch lost it.
	got := must(c.Pods("ns").Get(ctx, "a", metav1.GetOptions{}))(t)
	if got.ResourceVersion != p.ResourceVersion {
		t.Errorf("stored pod at %s; want %s", got.ResourceVersion, p.ResourceVersion)
	}
}

// refusingGate refuses every delivery, with err.
type refusingGate struct{ err error }

func (g refusingGate) Enter(_ context.Context, s gate.Step) error {
	if s.Kind == gate.StepDelivery {
		return g.err
	}
	return nil
}

// A watch the gate ends instead of a delivery keeps that delivery's work
// until its consumer stops it, as a watch's end does: a consumer that
// watches again (an informer) takes on that work first, and a simulation
// does not find nothing left to do in between. (The work used to end
// before the close: RunUntil could report a stall, or check its condition,
// while an informer was about to watch again.)
func TestGateEndedWatchKeepsItsWorkUntilStop(t *testing.T) {
	for _, err := range []error{errors.New("watch closed by the test"), gate.ErrWatchExpired} {
		t.Run(err.Error(), func(t *testing.T) {
			fc := clock.NewFake(t0)
			c := New(Config{Clock: fc, Seed: 1, Gate: refusingGate{err: err}})
			ctx := ctxT(t)
			w, werr := c.Pods("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: c.ResourceVersion()})
			if werr != nil {
				t.Fatal(werr)
			}
			w.(interface{ AckEvents() }).AckEvents() // as an informer does
			must(c.Pods("ns").Create(ctx, pod("a", "", ""), metav1.CreateOptions{}))(t)
			for range w.ResultChan() { // the 410, if any, then the close
			}
			if busy := fc.Busy(); busy == "" {
				t.Fatal("no work left once the refused watch closed; want the refused delivery's until Stop")
			}
			w.Stop()
			if err := fc.Settle(ctx); err != nil {
				t.Fatalf("after Stop: %v", err)
			}
		})
	}
}
