package deployment_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/google/go-cmp/cmp"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
	"github.com/ctrlkit/ctrlkit/internal/queuetest"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// trackedRig is a Controller with its own Reconciler, run by runTracked.
type trackedRig struct {
	fc       *clock.Fake
	dw, rsw  *fakewatch.Watch // the Deployment and ReplicaSet watches, fed by the test
	finished *queuetest.Counter
	skipped  *atomic.Int64 // syncs the controller reported skipped (a SyncSkipped method)
}

// skipCounter is a queue hook that also counts skipped syncs.
type skipCounter struct {
	*queuetest.Counter
	skipped *atomic.Int64
}

var _ interface{ SyncSkipped() } = skipCounter{}

func (s skipCounter) SyncSkipped() { s.skipped.Add(1) }

// runTracked runs a Controller with its own Reconciler writing through
// client, on informers fed by fake watches (d and rss listed at the
// start), all on one fake clock, until the test ends.
func runTracked(t *testing.T, w *world, d *appsv1.Deployment, client deployment.Client, rss ...*appsv1.ReplicaSet) *trackedRig {
	t.Helper()
	r := &trackedRig{fc: clock.NewFake(t0), finished: queuetest.NewCounter(), skipped: new(atomic.Int64)}
	dInf, dw := source(r.fc, d)
	rsInf, rsw := source(r.fc, rss...)
	podInf, _ := source[*corev1.Pod](r.fc)
	r.dw, r.rsw = dw, rsw
	c, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Client: client, Events: w,
		Clock: r.fc, Metrics: skipCounter{r.finished, r.skipped},
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, dInf.Run, rsInf.Run, podInf.Run, c.Run)
	return r
}

// syncs lets the clock settle and fails the test unless exactly n keys
// have been processed since the start.
func (r *trackedRig) syncs(t *testing.T, n int) {
	t.Helper()
	settle(t, r.fc)
	if got := r.finished.Count(); got != n {
		t.Fatalf("%d keys processed; want %d", got, n)
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

	r := runTracked(t, w, d, client)

	// First sync: the ReplicaSet is created and the status written.
	r.syncs(t, 1)
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
	r.rsw.Add(rs)
	r.syncs(t, 2)
	if got := writes(); len(got) != len(first) {
		t.Errorf("a sync on the replaced version wrote %q", got[len(first):])
	}
	if n := r.skipped.Load(); n != 1 {
		t.Errorf("%d syncs reported skipped; want 1", n)
	}

	// The status write's event arrives: now the sync runs, and writes the
	// new availability on the current version.
	cur, err := w.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	r.dw.Modify(cur)
	r.syncs(t, 3)
	got := writes()
	if len(got) != len(first)+1 || got[len(first)] != "update-status web" {
		t.Errorf("writes after the event = %q; want one more status write", got[len(first):])
	}
	if len(conflicts) > 0 {
		t.Errorf("conflicts: %q", conflicts)
	}
	if n := r.skipped.Load(); n != 1 {
		t.Errorf("%d syncs reported skipped after the event; want still 1", n)
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
	r := runTracked(t, w, d, client)

	r.syncs(t, 1) // creates the ReplicaSet, "writes" the status
	if n := client.count(); n != 1 {
		t.Fatalf("status writes after the first sync = %d; want 1", n)
	}
	w.settle()
	for _, rs := range w.rss {
		r.rsw.Add(rs.DeepCopy()) // now available: the status must be written again
	}
	r.syncs(t, 2)
	if n := client.count(); n != 2 {
		t.Errorf("status writes after the ReplicaSet's event = %d; want 2 (the sync waited for an event that cannot come)", n)
	}
}

// A sync that runs before the ReplicaSet cache has the ReplicaSet the last
// sync created must not take it for missing (e2e soak seed 438): with a
// new template by then, upstream creates a second ReplicaSet at full size
// beside the first, numbered from a history without it (two ReplicaSets of
// revision 1, both full under Recreate). The controller waits until the
// cache has what it created.
func TestControllerWaitsForItsOwnCreates(t *testing.T) {
	w := newWorld()
	d0 := newDeployment(3, "web:v1")
	d0.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	d := w.addDeployment(d0)
	key := deployment.KeyOf(d)
	r := runTracked(t, w, d, w)

	r.syncs(t, 1) // creates ReplicaSet A; its event is held back
	if n := len(w.replicaSets()); n != 1 {
		t.Fatalf("first sync left %d ReplicaSets; want 1", n)
	}
	a := w.replicaSets()[0]

	// The template changes; the Deployment's event arrives, the
	// ReplicaSet's does not yet.
	w.edit(key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:v2" })
	cur, err := w.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	r.dw.Modify(cur)
	r.syncs(t, 2)
	if got := w.replicaSets(); len(got) != 1 {
		t.Fatalf("a sync on a cache without its own ReplicaSet created another: %d ReplicaSets", len(got))
	}

	// A's event arrives: the old ReplicaSet is scaled down first, and only
	// then is the new one created, as revision 2.
	r.rsw.Add(a)
	r.syncs(t, 3)
	w.settle()
	w.dropTerminating()
	for _, rs := range w.replicaSets() {
		r.rsw.Modify(rs)
	}
	r.syncs(t, 4)
	revisions := map[string]string{}
	for _, rs := range w.replicaSets() {
		revisions[rs.Spec.Template.Spec.Containers[0].Image] = fmt.Sprintf("%s replicas=%d", rs.Annotations[rollout.RevisionAnnotation], *rs.Spec.Replicas)
	}
	want := map[string]string{"web:v1": "1 replicas=0", "web:v2": "2 replicas=3"}
	if diff := cmp.Diff(want, revisions); diff != "" {
		t.Errorf("ReplicaSets by image (-want +got):\n%s", diff)
	}
}

// lostCreate is the world, except that creates report a timeout after
// they happened (a response lost on the way back).
type lostCreate struct{ *world }

func (l lostCreate) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	if _, err := l.world.CreateReplicaSet(ctx, rs); err != nil {
		return nil, err
	}
	return nil, apierrors.NewTimeoutError("response lost", 1)
}

// A create that failed may have happened: the next sync, with the cache
// still without that name, reads it live and waits for its event. A
// created ReplicaSet that is gone before the cache saw it is not waited
// for.
func TestControllerConfirmsCreatesLive(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lost     bool // the create reports a timeout
		deleted  bool // the created ReplicaSet is deleted before its event
		wantRSes int  // after the sync on the new template
	}{
		{name: "created, event late", wantRSes: 1},
		{name: "response lost, event late", lost: true, wantRSes: 1},
		{name: "deleted before the cache saw it", deleted: true, wantRSes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			d0 := newDeployment(3, "web:v1")
			d0.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			d := w.addDeployment(d0)
			key := deployment.KeyOf(d)
			var client deployment.Client = w
			if tc.lost {
				client = lostCreate{w}
			}
			r := runTracked(t, w, d, client)
			r.syncs(t, 1)
			a := w.replicaSets()[0]
			if tc.deleted {
				if err := w.DeleteReplicaSet(context.Background(), types.NamespacedName{Namespace: a.Namespace, Name: a.Name}, a.UID); err != nil {
					t.Fatal(err)
				}
			}
			w.edit(key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:v2" })
			cur, err := w.Get(key)
			if err != nil {
				t.Fatal(err)
			}
			r.dw.Modify(cur)
			r.syncs(t, 2)
			got := w.replicaSets()
			if len(got) != tc.wantRSes {
				t.Fatalf("after the sync on the new template: %d ReplicaSets; want %d", len(got), tc.wantRSes)
			}
			wantImage := "web:v1" // waited
			if tc.deleted {
				wantImage = "web:v2" // nothing to wait for: created the new one
			}
			if img := got[0].Spec.Template.Spec.Containers[0].Image; img != wantImage {
				t.Errorf("ReplicaSet image = %s; want %s", img, wantImage)
			}
		})
	}
}

// lostScale is the world, except that while lose is set a ReplicaSet
// update that grows a ReplicaSet reports a server error after it happened
// (a response lost on the way back).
type lostScale struct {
	*world
	lose atomic.Bool
}

func (l *lostScale) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	l.mu.Lock()
	before := ptrVal(l.rss[types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}].Spec.Replicas)
	l.mu.Unlock()
	out, err := l.world.UpdateReplicaSet(ctx, rs)
	if err != nil || !l.lose.Load() || *rs.Spec.Replicas <= before {
		return out, err
	}
	return nil, apierrors.NewTooManyRequests("response lost", 1)
}

// A scale that failed may have happened (e2e soak seed 3878): a rollback
// grew the old ReplicaSet A from 3 to 6, but the answer was an error, and
// the cache still has A at 3 when the template changes again. Upstream
// sizes the next ReplicaSet from that stale spec.replicas: 4 more pods, 10
// in all for 6 + maxSurge 1. The controller settles the failed write with
// a live read and waits for A's event.
func TestControllerWaitsForItsFailedScales(t *testing.T) {
	w := newWorld()
	w.unhealthyImage = "web:v2"
	d0 := newDeployment(6, "web:v1")
	surge, unavailable := intstr.FromInt32(1), intstr.FromString("50%")
	d0.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
	d := w.addDeployment(d0)
	key := deployment.KeyOf(d)
	client := &lostScale{world: w}
	r := runTracked(t, w, d, client)
	seen := map[string]bool{}
	deliver := func() { // every event arrives
		settle(t, r.fc)
		cur, err := w.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		r.dw.Modify(cur)
		for _, rs := range w.replicaSets() {
			if seen[rs.Name] {
				r.rsw.Modify(rs)
			} else {
				seen[rs.Name] = true
				r.rsw.Add(rs)
			}
		}
		settle(t, r.fc)
	}
	feed := func() { // the pods follow, and every event arrives
		settle(t, r.fc)
		w.settle()
		deliver()
	}
	setImage := func(img string) {
		w.edit(key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = img })
		cur, err := w.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		r.dw.Modify(cur)
		settle(t, r.fc)
	}
	feed()
	feed() // A at 6, available
	setImage("web:v2")
	feed() // B (never available) at 1, A down to 3
	feed() // B up to 4
	sizes := func() (map[string]int32, int32) {
		m := map[string]int32{}
		var total int32
		for _, rs := range w.replicaSets() {
			m[image(rs)] = *rs.Spec.Replicas
			total += *rs.Spec.Replicas
		}
		return m, total
	}
	if got, _ := sizes(); !cmp.Equal(got, map[string]int32{"web:v1": 3, "web:v2": 4}) {
		t.Fatalf("ReplicaSets by image before the rollback = %v; want web:v1 at 3, web:v2 at 4", got)
	}

	// Roll back: B is scaled down to 0, and once the events have arrived
	// A is scaled up to 6, but the answer is an error. The retries (the
	// clock moves on) find the cache behind the server.
	client.lose.Store(true)
	setImage("web:v1")
	deliver()
	client.lose.Store(false)
	r.fc.Step(time.Second)
	settle(t, r.fc)
	if got, _ := sizes(); got["web:v1"] != 6 {
		t.Fatalf("ReplicaSets by image after the lost scale = %v; want web:v1 at 6", got)
	}

	// A new template, whose event arrives before A's: nothing is sized
	// from A's stale spec.replicas.
	setImage("web:v3")
	r.fc.Step(time.Second)
	settle(t, r.fc)
	if got, total := sizes(); total > 6+1 {
		t.Fatalf("a sync on A's stale size: ReplicaSets by image = %v, %d replicas, more than 6+1", got, total)
	}

	// A's event arrives: the rollout goes on within maxSurge.
	feed()
	if got, total := sizes(); total > 6+1 || got["web:v3"] != 1 {
		t.Errorf("ReplicaSets by image = %v, %d replicas in all; want web:v3 at 1, at most 6+1 in all", got, total)
	}
}

// recordedUpdates is the world, recording what each ReplicaSet update
// stored.
type recordedUpdates struct {
	*world
	mu      sync.Mutex
	updates []*appsv1.ReplicaSet
}

func (r *recordedUpdates) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out, err := r.world.UpdateReplicaSet(ctx, rs)
	if err == nil {
		r.mu.Lock()
		r.updates = append(r.updates, out.DeepCopy())
		r.mu.Unlock()
	}
	return out, err
}

// A rolling step scales an old ReplicaSet twice in one sync (its unhealthy
// pod first, 4 → 3, then as availability allows, 3 → 1), the second
// update based on the first's result. When the cache then holds the first
// write's result, it is still behind (e2e soak seed 4019): the next sync,
// on a new template, must wait for the second write's event. Taking the
// ReplicaSet at 3 (its status counting 3 available pods, 2 of them being
// deleted), it would scale the other ReplicaSet's one available pod away,
// below maxUnavailable.
func TestControllerWaitsForBothOfTwoWrites(t *testing.T) {
	w := newWorld()
	d0 := newDeployment(4, "web:v2")
	surge, unavailable := intstr.FromInt32(1), intstr.FromString("50%")
	d0.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
	d0.Annotations = map[string]string{rollout.RevisionAnnotation: "2"}
	d := w.addDeployment(d0)
	key := deployment.KeyOf(d)
	rsOf := func(img string, rev string, spec, available int32) *appsv1.ReplicaSet {
		tpl := *d.Spec.Template.DeepCopy()
		tpl.Spec.Containers[0].Image = img
		hash := rollout.ComputeHash(&tpl, nil)
		tpl.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-" + hash, Labels: tpl.Labels,
				Annotations:     map[string]string{rollout.RevisionAnnotation: rev, rollout.DesiredReplicasAnnotation: "4", rollout.MaxReplicasAnnotation: "5"},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
			Spec: appsv1.ReplicaSetSpec{Replicas: &spec, Template: tpl,
				Selector: &metav1.LabelSelector{MatchLabels: tpl.Labels}},
		}
		rs = w.addReplicaSet(rs)
		rs.Status = appsv1.ReplicaSetStatus{Replicas: spec, FullyLabeledReplicas: spec, ReadyReplicas: available, AvailableReplicas: available,
			ObservedGeneration: rs.Generation, TerminatingReplicas: new(int32)}
		w.mu.Lock()
		w.rss[types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}] = rs.DeepCopy()
		w.mu.Unlock()
		return rs
	}
	a := rsOf("web:v1", "1", 4, 3) // old, one pod unhealthy
	b := rsOf("web:v2", "2", 1, 1) // new, available
	client := &recordedUpdates{world: w}
	r := runTracked(t, w, d, client, a, b)
	settle(t, r.fc) // A is scaled 4 → 3 → 1
	client.mu.Lock()
	updates := slices.Clone(client.updates)
	client.mu.Unlock()
	if len(updates) != 2 || *updates[0].Spec.Replicas != 3 || *updates[1].Spec.Replicas != 1 {
		var sizes []int32
		for _, u := range updates {
			sizes = append(sizes, *u.Spec.Replicas)
		}
		t.Fatalf("ReplicaSet updates %v; want A scaled to 3, then to 1", sizes)
	}
	// The first update's event arrives, and a new template.
	r.rsw.Modify(updates[0])
	w.edit(key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:v3" })
	cur, err := w.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	before := len(w.replicaSets())
	writes := func() int { w.mu.Lock(); defer w.mu.Unlock(); return len(w.writes) }
	n := writes()
	r.dw.Modify(cur)
	settle(t, r.fc)
	if got := writes(); got != n || len(w.replicaSets()) != before {
		t.Fatalf("a sync on the first write's result (A at 3) wrote %d times: %q", got-n, w.writes[n:])
	}
	// The second update's event arrives: the rollout goes on, within
	// maxUnavailable (B's one available pod stays while A has 1).
	r.rsw.Modify(updates[1])
	settle(t, r.fc)
	for _, rs := range w.replicaSets() {
		if image(rs) == "web:v2" && *rs.Spec.Replicas < 1 {
			t.Errorf("B scaled to %d with A at 1: availability below 4-2", *rs.Spec.Replicas)
		}
	}
}
