package replicaset_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// running is a world with informers and a Controller running over it.
type running struct {
	w      *world
	c      *replicaset.Controller
	rss    *informer.Cache[*appsv1.ReplicaSet] // the ReplicaSet informer's cache
	cancel context.CancelFunc
	done   chan error
}

// controllerOpts changes what startControllerWith runs. Zero fields mean
// the world's own sources and client, no metrics and no batch period.
type controllerOpts struct {
	rss     informer.ListWatcher[*appsv1.ReplicaSet]
	pods    informer.ListWatcher[*corev1.Pod]
	client  replicaset.Client
	metrics workqueue.Metrics
	batch   time.Duration // ControllerConfig.BatchPeriod
}

// startController runs informers and a controller (2 workers) over w until
// the test ends, all on w's fake clock: once it has settled (see
// running.settle), every change of the world has reached the controller
// and every sync it caused has finished.
func startController(t *testing.T, w *world) *running {
	t.Helper()
	return startControllerWith(t, w, controllerOpts{})
}

// startControllerWith is startController with the changes of o.
func startControllerWith(t *testing.T, w *world, o controllerOpts) *running {
	t.Helper()
	if o.rss == nil {
		o.rss = w.rsSource()
	}
	if o.pods == nil {
		o.pods = w.podSource()
	}
	if o.client == nil {
		o.client = w
	}
	rsInf := informer.New(o.rss, informer.Config[*appsv1.ReplicaSet]{Clock: w.clock})
	podInf := informer.New(o.pods, informer.Config[*corev1.Pod]{Clock: w.clock})
	c, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: rsInf, Pods: podInf, Client: o.client, Events: w, Clock: w.clock, Workers: 2,
		Metrics: o.metrics, BatchPeriod: o.batch,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{w: w, c: c, rss: rsInf.Cache(), cancel: cancel, done: make(chan error, 1)}
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{rsInf.Run, podInf.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				t.Errorf("informer Run: %v", err)
			}
		})
	}
	go func() { r.done <- c.Run(ctx) }()
	t.Cleanup(func() {
		r.stop(t)
		wg.Wait()
	})
	return r
}

// stop cancels the controller and checks that Run returns nil.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	if err, ok := <-r.done; ok {
		if err != nil {
			t.Errorf("Controller.Run returned %v", err)
		}
		close(r.done)
	}
}

// settle lets the work of the current instant finish: every change of the
// world has reached the informers and their handlers, every key queued
// has been synced, and nothing more can happen until the clock moves.
func (r *running) settle(t *testing.T) {
	t.Helper()
	if err := r.w.clock.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// settled lets the clock settle and fails the test unless cond holds.
func (r *running) settled(t *testing.T, what string, cond func() bool) {
	t.Helper()
	r.settle(t)
	if !cond() {
		t.Fatalf("not %s once the clock has settled", what)
	}
}

func TestControllerConverges(t *testing.T) {
	cases := []struct {
		name string
		spec int32
		seed func(rs *appsv1.ReplicaSet) []*corev1.Pod
	}{
		{name: "from nothing", spec: 5, seed: func(*appsv1.ReplicaSet) []*corev1.Pod { return nil }},
		{name: "too many", spec: 2, seed: func(rs *appsv1.ReplicaSet) []*corev1.Pod { return ownedPods(rs, 7) }},
		{name: "orphans matching", spec: 3, seed: func(*appsv1.ReplicaSet) []*corev1.Pod {
			var out []*corev1.Pod
			for i := range 5 {
				out = append(out, newPod(fmt.Sprintf("orphan-%d", i), withLabels(map[string]string{"app": "web"})))
			}
			return out
		}},
		{name: "others' and terminating pods", spec: 2, seed: func(rs *appsv1.ReplicaSet) []*corev1.Pod {
			other := newRS("other", 1)
			return []*corev1.Pod{
				newPod("theirs-1", ownedBy(other), withLabels(map[string]string{"app": "web"})),
				newPod("theirs-2", ownedBy(other), withLabels(map[string]string{"app": "web"})),
				newPod("mine-terminating", ownedBy(rs), deletingAt(t0)),
				newPod("mine-failed", ownedBy(rs), inPhase(corev1.PodFailed)),
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t0)
			rs := w.addRS(newRS("web", tc.spec))
			for _, p := range tc.seed(rs) {
				w.addPod(p)
			}
			r := startController(t, w)
			r.settled(t, fmt.Sprintf("%d active pods and status", tc.spec), func() bool {
				st := w.rs(key("web")).Status
				return len(activeOwned(w, rs)) == int(tc.spec) && st.Replicas == tc.spec && st.ObservedGeneration == 1
			})
			for _, p := range w.snapshot() {
				if ref := metav1.GetControllerOf(p); ref != nil && ref.Name == "other" && p.DeletionTimestamp != nil {
					t.Errorf("pod %s of another owner was deleted", p.Name)
				}
			}
			// Settled: a resync of everything must not change the world.
			creates := w.creates
			r.w.clock.Step(time.Minute)
			r.settle(t)
			if got := len(activeOwned(w, rs)); got != int(tc.spec) || w.creates != creates {
				t.Errorf("after settling: %d pods, %d creates; want %d, %d", got, w.creates, tc.spec, creates)
			}
		})
	}
}

func TestControllerScalesAndCountsAvailability(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 2, func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = 30 }))
	r := startController(t, w)
	r.settled(t, "2 pods", func() bool { return len(activeOwned(w, rs)) == 2 })

	// The kubelet makes the pods ready; they become available 30s later.
	for _, name := range activeOwned(w, rs) {
		w.updatePod(key(name), func(p *corev1.Pod) {
			readySince(w.clock.Now())(p)
		})
	}
	r.settled(t, "2 ready, 0 available", func() bool {
		st := w.rs(key("web")).Status
		return st.ReadyReplicas == 2 && st.AvailableReplicas == 0
	})
	r.w.clock.Step(29 * time.Second)
	r.settled(t, "0 available after 29s", func() bool { return w.rs(key("web")).Status.AvailableReplicas == 0 })
	r.w.clock.Step(time.Second)
	r.settled(t, "2 available after 30s", func() bool { return w.rs(key("web")).Status.AvailableReplicas == 2 })

	// Scale down: a spec change is picked up from the informer.
	smaller := w.rs(key("web")).DeepCopy()
	one := int32(1)
	smaller.Spec.Replicas = &one
	smaller.Generation = 2
	w.addRS(smaller)
	r.settled(t, "1 pod at generation 2", func() bool {
		st := w.rs(key("web")).Status
		return len(activeOwned(w, rs)) == 1 && st.Replicas == 1 && st.ObservedGeneration == 2
	})
}

func TestControllerDeletedReplicaSetIsForgotten(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 2))
	r := startController(t, w)
	r.settled(t, "2 pods", func() bool { return len(activeOwned(w, rs)) == 2 })
	r.c.Reconciler().Expectations().ExpectCreations(key("web"), 5, t0)
	w.deleteRS(key("web"))
	r.settled(t, "expectations dropped", func() bool {
		_, ok := r.c.Reconciler().Expectations().Get(key("web"))
		return !ok
	})
}

func TestNewControllerValidates(t *testing.T) {
	w := newWorld(t0)
	podInf := informer.New(w.podSource(), informer.Config[*corev1.Pod]{})
	rsInf := informer.New(w.rsSource(), informer.Config[*appsv1.ReplicaSet]{})
	for _, cfg := range []replicaset.ControllerConfig{
		{Pods: podInf, Client: w},
		{ReplicaSets: rsInf, Client: w},
		{ReplicaSets: rsInf, Pods: podInf},
		{ReplicaSets: rsInf, Pods: podInf, Client: w, Workers: -1},
	} {
		if _, err := replicaset.NewController(cfg); err == nil {
			t.Errorf("NewController(%+v) = nil error; want one", cfg)
		}
	}
}

// A ReplicaSet deleted and recreated under the same name reaches the
// informer as one update with a new UID. The old object's expectations must
// go with it, or the new one would wait for pods nobody will create.
func TestControllerRecreatedReplicaSetDropsExpectations(t *testing.T) {
	w := newWorld(t0)
	w.addRS(newRS("web", 0, func(rs *appsv1.ReplicaSet) { rs.Generation = 2 }))
	r := startController(t, w)
	// The status write of generation 2 shows the controller has seen the
	// original ReplicaSet.
	r.settled(t, "generation 2 observed", func() bool { return w.rs(key("web")).Status.ObservedGeneration == 2 })

	exp := r.c.Reconciler().Expectations()
	exp.ExpectCreations(key("web"), 5, t0)
	w.addRS(newRS("web", 0, func(rs *appsv1.ReplicaSet) { rs.UID = "rs-web-recreated" }))

	// No clock steps here: expiry must not be what clears them.
	r.settle(t)
	if e, ok := exp.Get(key("web")); ok && e.Add != 0 {
		t.Fatalf("expectations of the replaced ReplicaSet still pending: %+v", e)
	}
}

// A pod deleted while the pod watch is down reaches the controller only as
// a tombstone (Deleted.FinalStateUnknown), when the informer lists again
// after the watch expires. The deletion must count for the ReplicaSet's
// expectations, or it would wait for an event that never comes, and wake
// the ReplicaSet, or nothing would replace the pod.
func TestControllerCountsTombstones(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 2))
	for _, name := range []string{"a", "b", "c"} {
		w.addPod(newPod(name, ownedBy(rs)))
	}
	// The pod informer's first watch delivers nothing until the test ends
	// it with a 410 Expired; the watch after the relist is the world's.
	down := fakewatch.New(w.clock, "pod watch, down")
	var watches atomic.Int32
	pods := informer.ListWatchFuncs[*corev1.Pod]{
		ListFunc: w.podSource().List,
		WatchFunc: func(ctx context.Context, rv string) (watch.Interface, error) {
			if watches.Add(1) == 1 {
				return down, nil
			}
			return w.podSource().Watch(ctx, rv)
		},
	}
	r := startControllerWith(t, w, controllerOpts{pods: pods})
	exp := r.c.Reconciler().Expectations()

	// One pod too many: the controller deletes one and waits to see it go.
	r.settled(t, "a pod deleted", func() bool { return len(w.snapshot()) == 2 })
	left := w.snapshot()
	gone := map[types.UID]bool{"uid-a": true, "uid-b": true, "uid-c": true}
	for _, p := range left {
		delete(gone, p.UID)
	}
	if got := exp.PendingDeletions(key("web")); len(gone) != 1 || len(got) != 1 || !gone[got[0]] {
		t.Fatalf("pending deletions %q after the controller deleted %v", got, gone)
	}

	// An eviction removes another pod, then the watch expires. The relist
	// finds both gone and the informer emits two tombstones.
	if err := w.DeletePod(context.Background(), ns, left[0].Name, left[0].UID); err != nil {
		t.Fatal(err)
	}
	down.Error(&apierrors.NewResourceExpired("watch expired").ErrStatus)

	r.settled(t, "a replacement pod", func() bool { return len(activeOwned(w, rs)) == 2 })
	if got := activeOwned(w, rs); got[0] != left[1].Name && got[1] != left[1].Name {
		t.Errorf("active pods %q; want %s and a new one", got, left[1].Name)
	}
	if e, _ := exp.Get(key("web")); !e.Fulfilled() {
		t.Errorf("expectations %+v; want fulfilled", e)
	}
	if got := exp.PendingDeletions(key("web")); len(got) != 0 {
		t.Errorf("pending deletions %q; want none", got)
	}
	if creates, _ := w.writes(); creates != 1 {
		t.Errorf("%d pods created; want 1", creates)
	}
}
