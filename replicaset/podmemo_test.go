package replicaset_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// unbuffered hides PodCache's appending reads: the Reconciler then lists
// through ListByController, in the same order, and learns every pod of
// every sync instead of remembering what it learnt.
type unbuffered struct{ pc *replicaset.PodCache }

func (u unbuffered) List(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.Pod, error) {
	return u.pc.List(ctx, namespace, sel)
}

func (u unbuffered) ListByController(ctx context.Context, namespace string, uid types.UID) ([]*corev1.Pod, error) {
	return u.pc.ListByController(ctx, namespace, uid)
}

// cachedWorld is a world whose pods are read through an informer cache
// that follows every change, as a watch would.
func cachedWorld(t *testing.T) (*world, *replicaset.PodCache) {
	t.Helper()
	w := newWorld(t0)
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	w.observers = append(w.observers, func(old, cur *corev1.Pod) {
		var err error
		switch {
		case cur == nil:
			c.Delete(keyOf(old))
		case old == nil:
			err = c.Add(cur)
		default:
			err = c.Add(cur)
		}
		if err != nil {
			t.Errorf("pod cache: %v", err)
		}
	})
	pc, err := replicaset.NewPodCache(c)
	if err != nil {
		t.Fatal(err)
	}
	return w, pc
}

// describeWorld renders what a sync can change: the pods and the status.
func describeWorld(w *world, rs types.NamespacedName) string {
	var b strings.Builder
	for _, p := range w.snapshot() {
		var owners []string
		for _, r := range p.OwnerReferences {
			owners = append(owners, fmt.Sprintf("%s/%s/%s/%v", r.Kind, r.Name, r.UID, r.Controller != nil && *r.Controller))
		}
		fmt.Fprintf(&b, "%s %s owners=%v labels=%v phase=%s deleting=%v\n", p.Name, p.UID, owners, p.Labels, p.Status.Phase, p.DeletionTimestamp != nil)
	}
	if cur := w.rs(rs); cur != nil {
		st := cur.Status
		st.TerminatingReplicas = nil
		fmt.Fprintf(&b, "status %+v (terminating %v)\n", st, ptrStr(cur.Status.TerminatingReplicas))
	}
	return b.String()
}

func ptrStr(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// The Reconciler remembers, between syncs, what it learnt of each pod of an
// informer cache (podMemo). It must decide exactly as a Reconciler that
// learns every pod at every sync, over the same cache contents in the same
// order, while pods, the ReplicaSet and the clock change between syncs.
func TestReconcileRemembersPodsExactly(t *testing.T) {
	defer replicaset.SetMemoMinPods(1)()
	r := rand.New(rand.NewPCG(18, 1000))
	for iter := range 150 {
		t.Run(fmt.Sprint(iter), func(t *testing.T) {
			seed := r.Uint64()
			var worlds [2]*world
			var recs [2]*replicaset.Reconciler
			for i := range worlds {
				w, pc := cachedWorld(t)
				w.clock = clock.NewDeterministic(t0) // writes one at a time, in plan order
				w.graceful = seed%2 == 0
				var pods reconcile.Lister[*corev1.Pod] = pc
				if i == 1 {
					pods = unbuffered{pc}
				}
				rec, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
					ReplicaSets: rsReader{w}, Pods: pods, Client: w, Events: w, Clock: w.clock,
					EagerStatus: seed%3 == 0,
				})
				if err != nil {
					t.Fatal(err)
				}
				w.observers = append(w.observers, func(old, cur *corev1.Pod) {
					if old == nil && cur.DeletionTimestamp != nil {
						return // added being deleted: nothing to observe
					}
					observeExpectations(rec.Expectations(), old, cur)
				})
				worlds[i], recs[i] = w, rec
			}
			ops := rand.New(rand.NewPCG(seed, 1))
			var trace []string
			for step := range 40 {
				op := randomMemoOp(ops, step)
				trace = append(trace, op.name)
				if step%10 == 9 {
					runtime.GC() // remembered pods may be gone, and their addresses reused
				}
				for _, w := range worlds {
					op.apply(w)
				}
				for range 1 + ops.IntN(2) { // a second sync finds every pod remembered
					var got [2]string
					for i, rec := range recs {
						res, err := rec.Reconcile(context.Background(), key("web"))
						got[i] = fmt.Sprintf("result %+v, err %v\nevents %q\n%s", res, err, worlds[i].takeEvents(), describeWorld(worlds[i], key("web")))
					}
					if diff := cmp.Diff(got[1], got[0]); diff != "" {
						t.Fatalf("after %s: sync with memo differs (-without +with):\n%s", strings.Join(trace, ", "), diff)
					}
				}
			}
		})
	}
}

// What the Reconciler remembers of pods refers to them weakly: the pod
// objects a cache has replaced since a sync are not kept alive by it.
func TestReconcileKeepsNoPodAlive(t *testing.T) {
	const n = 100 // enough for the Reconciler to remember its pods
	rs := newRS("web", n)
	rs.Status = appsv1.ReplicaSetStatus{
		Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		ObservedGeneration: 1, TerminatingReplicas: new(int32),
	}
	rsCache := informer.NewCache(informer.CacheConfig[*appsv1.ReplicaSet]{})
	if err := rsCache.Add(rs); err != nil {
		t.Fatal(err)
	}
	rss, err := reconcile.FromCache(rsCache)
	if err != nil {
		t.Fatal(err)
	}
	podCache := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	for i := range n {
		if err := podCache.Add(newPod(fmt.Sprintf("web-%03d", i), ownedBy(rs), readySince(t0.Add(-time.Hour)))); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := replicaset.NewPodCache(podCache)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t0) // the client: a settled ReplicaSet writes nothing
	rec, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{ReplicaSets: rss, Pods: pc, Client: w, Clock: w.clock})
	if err != nil {
		t.Fatal(err)
	}
	sync := func() {
		t.Helper()
		if res, err := rec.Reconcile(context.Background(), key("web")); err != nil || res != (reconcile.Result{}) {
			t.Fatalf("Reconcile = %+v, %v; want a no-op", res, err)
		}
	}
	sync()
	old := replacePods(t, podCache)
	runtime.GC()
	runtime.GC()
	alive := 0
	for _, p := range old {
		if p.Value() != nil {
			alive++
		}
	}
	if alive > 0 {
		t.Errorf("%d of %d replaced pods are still alive after a GC; want 0", alive, len(old))
	}
	sync() // learns the new objects
	sync() // remembers them
	if w.creates+w.statuses > 0 {
		t.Errorf("a settled ReplicaSet's syncs wrote: %d creates, %d status updates", w.creates, w.statuses)
	}
}

// replacePods replaces every pod of c with a copy, as a watch does for
// an update, and returns weak pointers to the replaced objects.
func replacePods(t *testing.T, c *informer.Cache[*corev1.Pod]) []weak.Pointer[corev1.Pod] {
	t.Helper()
	pods, err := c.List(ns, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	old := make([]weak.Pointer[corev1.Pod], len(pods))
	for i, p := range pods {
		old[i] = weak.Make(p)
		if err := c.Add(p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	return old
}

type memoOp struct {
	name  string
	apply func(*world)
}

// randomMemoOp returns a change to apply to both worlds: pods added,
// changed (a new object, as an API server and its informer make) and
// deleted; the ReplicaSet resized, relabelled, given another selector,
// deleted, recreated with a new UID; time passing.
func randomMemoOp(r *rand.Rand, step int) memoOp {
	rsMod := func(name string, mod func(*appsv1.ReplicaSet)) memoOp {
		return memoOp{name, func(w *world) {
			cur := w.rs(key("web"))
			if cur == nil {
				return
			}
			rs := cur.DeepCopy()
			mod(rs)
			rs.Generation++
			w.addRS(rs)
		}}
	}
	podName := fmt.Sprintf("p%02d", r.IntN(12))
	switch x := r.IntN(20); {
	case step == 0 || x == 0:
		uid := types.UID(fmt.Sprintf("rs-web-%d", r.IntN(3)))
		return memoOp{"create rs " + string(uid), func(w *world) {
			if w.rs(key("web")) == nil {
				w.addRS(newRS("web", 3, func(rs *appsv1.ReplicaSet) { rs.UID = uid }))
			}
		}}
	case x == 1:
		return memoOp{"delete rs", func(w *world) { w.deleteRS(key("web")) }}
	case x == 2:
		n := int32(r.IntN(7))
		return rsMod(fmt.Sprintf("resize to %d", n), func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = &n })
	case x == 3:
		m := int32(r.IntN(2) * 30)
		return rsMod(fmt.Sprintf("minReadySeconds %d", m), func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = m })
	case x == 4:
		tier := r.IntN(2) == 0
		return rsMod(fmt.Sprintf("template tier %v", tier), func(rs *appsv1.ReplicaSet) {
			l := map[string]string{"app": "web"}
			if tier {
				l["tier"] = "front"
			}
			rs.Spec.Template.Labels = l
			if rs.Spec.Selector.MatchLabels["tier"] != "" && !tier {
				rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
			}
		})
	case x == 5:
		tier := r.IntN(2) == 0
		return rsMod(fmt.Sprintf("selector tier %v", tier), func(rs *appsv1.ReplicaSet) {
			sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
			if tier {
				sel.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front"}}}
				rs.Spec.Template.Labels = map[string]string{"app": "web", "tier": "front"}
			}
			rs.Spec.Selector = sel
		})
	case x == 6:
		return rsMod("rs deleting", func(rs *appsv1.ReplicaSet) {
			ts := metav1.NewTime(t0)
			rs.DeletionTimestamp = &ts
		})
	case x == 7:
		d := time.Duration(r.IntN(40)) * time.Second
		return memoOp{"clock +" + d.String(), func(w *world) { w.clock.Step(d) }}
	case x == 8:
		return memoOp{"reap", func(w *world) { w.reap() }}
	case x == 9:
		return memoOp{"delete " + podName, func(w *world) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if old, ok := w.pods[key(podName)]; ok {
				delete(w.pods, key(podName))
				w.nextRV()
				w.podChangedLocked(old, nil)
			}
		}}
	case x < 13:
		owner := r.IntN(4)
		labels := pickLabels(r)
		ready, phase, deleting := r.IntN(3), r.IntN(8), r.IntN(8) == 0
		return memoOp{fmt.Sprintf("add %s owner=%d labels=%v ready=%d phase=%d deleting=%v", podName, owner, labels, ready, phase, deleting), func(w *world) {
			var opts []podOpt
			switch owner {
			case 0:
				if rs := w.rs(key("web")); rs != nil {
					opts = append(opts, ownedBy(rs))
				}
			case 1:
				opts = append(opts, ownedBy(newRS("other", 1)))
			}
			opts = append(opts, withLabels(labels), onNode("n1"))
			switch ready {
			case 1:
				opts = append(opts, readySince(w.clock.Now().Add(-20*time.Second)))
			case 2:
				opts = append(opts, notReady())
			}
			switch phase {
			case 0:
				opts = append(opts, inPhase(corev1.PodFailed))
			case 1:
				opts = append(opts, inPhase(corev1.PodSucceeded))
			}
			if deleting {
				opts = append(opts, deletingAt(w.clock.Now()))
			}
			w.addPod(newPod(podName, opts...))
		}}
	default:
		change := r.IntN(5)
		labels := pickLabels(r)
		return memoOp{fmt.Sprintf("change %s (%d, labels %v)", podName, change, labels), func(w *world) {
			now := w.clock.Now()
			w.updatePod(key(podName), func(p *corev1.Pod) {
				switch change {
				case 0:
					p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
					readySince(now)(p)
				case 1:
					p.Status.Conditions = nil
				case 2:
					p.Labels = labels
				case 3:
					p.Status.Phase = corev1.PodFailed
				case 4:
					p.OwnerReferences = nil
				}
			})
		}}
	}
}

func pickLabels(r *rand.Rand) map[string]string {
	switch r.IntN(4) {
	case 0:
		return map[string]string{"app": "other"}
	case 1:
		return map[string]string{"app": "web", "tier": "front"}
	}
	return map[string]string{"app": "web"}
}
