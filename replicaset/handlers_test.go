package replicaset_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// TestEventRules checks the ReplicaSet controller's event-handler rules and
// expectation observers against upstream v1.37
// (pkg/controller/replicaset/replica_set.go, shared/spec/upstream-behaviour.md
// §1.O), one row per rule.
func TestEventRules(t *testing.T) {
	isController := true
	mkRS := func(name string, sel map[string]string, minReady int32) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), ResourceVersion: "1"}}
		r.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
		r.Spec.MinReadySeconds = minReady
		return r
	}
	web := mkRS("web", map[string]string{"app": "web"}, 0)
	slow := mkRS("slow", map[string]string{"app": "slow"}, 10)
	front := mkRS("front", map[string]string{"tier": "front"}, 0)
	empty := mkRS("empty", map[string]string{}, 0) // an empty selector selects nothing
	ref := func(kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: &isController}}
	}
	pod := func(rv string, lbls map[string]string, owners []metav1.OwnerReference, edit ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p-uid", ResourceVersion: rv,
			Labels: lbls, OwnerReferences: owners}}
		for _, e := range edit {
			e(p)
		}
		return p
	}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
	ready := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	ofWeb, ofSlow := ref("ReplicaSet", "web", "web-uid"), ref("ReplicaSet", "slow", "slow-uid")

	rss, err := reconcile.FromCache(informer.NewCache(informer.CacheConfig[*appsv1.ReplicaSet]{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*appsv1.ReplicaSet{web, slow, front, empty} {
		if err := rss.Cache().Add(r); err != nil {
			t.Fatal(err)
		}
	}
	rules := replicaset.EventRules{ReplicaSets: rss}
	ctx := context.Background()
	k := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	now := func(name string) reconcile.Enqueue { return reconcile.Enqueue{Key: k(name)} }
	batch := func(name string) reconcile.Enqueue { return reconcile.Enqueue{Key: k(name), Batch: true} }
	created := func(name string) replicaset.Observation {
		return replicaset.Observation{ReplicaSet: k(name), Kind: replicaset.PodCreated}
	}
	deleted := func(name string) replicaset.Observation {
		return replicaset.Observation{ReplicaSet: k(name), Kind: replicaset.PodDeleted, Pod: "p-uid"}
	}
	gone := func(name string) replicaset.Observation {
		return replicaset.Observation{ReplicaSet: k(name), Kind: replicaset.ReplicaSetGone}
	}
	type out struct {
		Enqueue []reconcile.Enqueue
		Observe []replicaset.Observation
	}
	got := func(es []reconcile.Enqueue, obs []replicaset.Observation) out { return out{es, obs} }
	recreated := web.DeepCopy()
	recreated.UID, recreated.ResourceVersion = "new-uid", "5"

	for _, tc := range []struct {
		name string
		got  out
		want out
	}{
		{"add RS", got(rules.ReplicaSetAdded(ctx, web)), out{Enqueue: []reconcile.Enqueue{now("web")}}},
		{"update RS, resync included", got(rules.ReplicaSetUpdated(ctx, web, web)), out{Enqueue: []reconcile.Enqueue{now("web")}}},
		{"update RS: new UID, the old one is gone first", got(rules.ReplicaSetUpdated(ctx, web, recreated)),
			out{[]reconcile.Enqueue{now("web"), now("web")}, []replicaset.Observation{gone("web")}}},
		{"delete RS: expectations dropped", got(rules.ReplicaSetDeleted(ctx, web)),
			out{[]reconcile.Enqueue{now("web")}, []replicaset.Observation{gone("web")}}},

		{"add pod: a creation of its controller", got(rules.PodAdded(ctx, pod("1", nil, ofWeb))),
			out{[]reconcile.Enqueue{batch("web")}, []replicaset.Observation{created("web")}}},
		{"add pod: controller UID differs", got(rules.PodAdded(ctx, pod("1", nil, ref("ReplicaSet", "web", "other")))), out{}},
		{"add pod: controller not a ReplicaSet", got(rules.PodAdded(ctx, pod("1", nil, ref("StatefulSet", "web", "web-uid")))), out{}},
		{"add pod being deleted: a deletion, not a creation", got(rules.PodAdded(ctx, pod("1", nil, ofWeb, deleting))),
			out{[]reconcile.Enqueue{batch("web")}, []replicaset.Observation{deleted("web")}}},
		{"add orphan pod: every ReplicaSet selecting it, no expectation", got(rules.PodAdded(ctx, pod("1", map[string]string{"app": "web", "tier": "front"}, nil))),
			out{Enqueue: []reconcile.Enqueue{batch("front"), batch("web")}}},
		{"add orphan pod without a match", got(rules.PodAdded(ctx, pod("1", map[string]string{"app": "none"}, nil))), out{}},

		{"update pod: resync ignored", got(rules.PodUpdated(ctx, pod("1", nil, ofWeb), pod("1", nil, ofWeb))), out{}},
		{"update pod: plain change syncs its controller", got(rules.PodUpdated(ctx, pod("1", nil, ofWeb), pod("2", nil, ofWeb))),
			out{Enqueue: []reconcile.Enqueue{batch("web")}}},
		{"update pod: deletion timestamp is the deletion", got(rules.PodUpdated(ctx, pod("1", nil, ofWeb), pod("2", nil, ofWeb, deleting))),
			out{[]reconcile.Enqueue{batch("web")}, []replicaset.Observation{deleted("web")}}},
		{"update pod: deleted with new labels, old labels' owner too",
			got(rules.PodUpdated(ctx, pod("1", map[string]string{"a": "1"}, ofWeb), pod("2", map[string]string{"a": "2"}, ofWeb, deleting))),
			out{[]reconcile.Enqueue{batch("web"), batch("web")}, []replicaset.Observation{deleted("web"), deleted("web")}}},
		{"update pod: controller changed, old and new", got(rules.PodUpdated(ctx, pod("1", nil, ofWeb), pod("2", nil, ofSlow))),
			out{Enqueue: []reconcile.Enqueue{batch("web"), batch("slow")}}},
		{"update pod: turned ready with minReadySeconds, again after it",
			got(rules.PodUpdated(ctx, pod("1", nil, ofSlow), pod("2", nil, ofSlow, ready))),
			out{Enqueue: []reconcile.Enqueue{batch("slow"), {Key: k("slow"), After: 10 * time.Second}}}},
		{"update pod: turned ready, no minReadySeconds", got(rules.PodUpdated(ctx, pod("1", nil, ofWeb), pod("2", nil, ofWeb, ready))),
			out{Enqueue: []reconcile.Enqueue{batch("web")}}},
		{"update pod: released, old owner and the selecting ReplicaSets",
			got(rules.PodUpdated(ctx, pod("1", map[string]string{"app": "web"}, ofWeb), pod("2", map[string]string{"app": "web"}, nil))),
			out{Enqueue: []reconcile.Enqueue{batch("web"), batch("web")}}},
		{"update orphan pod: labels now match", got(rules.PodUpdated(ctx, pod("1", nil, nil), pod("2", map[string]string{"tier": "front"}, nil))),
			out{Enqueue: []reconcile.Enqueue{batch("front")}}},
		{"update orphan pod: labels unchanged", got(rules.PodUpdated(ctx, pod("1", map[string]string{"app": "web"}, nil), pod("2", map[string]string{"app": "web"}, nil))),
			out{}},

		{"delete pod: a deletion of its controller", got(rules.PodDeleted(ctx, pod("1", nil, ofWeb))),
			out{[]reconcile.Enqueue{batch("web")}, []replicaset.Observation{deleted("web")}}},
		{"delete orphan pod: nobody", got(rules.PodDeleted(ctx, pod("1", map[string]string{"app": "web"}, nil))), out{}},
		{"delete pod: controller not cached", got(rules.PodDeleted(ctx, pod("1", nil, ref("ReplicaSet", "gone", "gone-uid")))), out{}},
	} {
		// The order of the keys is the cache's listing order (upstream's is
		// its indexer's, a map's): not part of the rules.
		byKey := cmpopts.SortSlices(func(a, b reconcile.Enqueue) bool { return a.String() < b.String() })
		if diff := cmp.Diff(tc.want, tc.got, byKey); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestExpectationsObserve checks that observations lower expectations as
// upstream's observers do: a creation by one, a deletion once per pod UID,
// and a gone ReplicaSet forgets everything.
func TestExpectationsObserve(t *testing.T) {
	t0 := time.Unix(1000, 0)
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	var e replicaset.Expectations
	e.ExpectCreations(key, 2, t0)
	e.Observe(replicaset.Observation{ReplicaSet: key, Kind: replicaset.PodCreated})
	if e.Satisfied(key, t0) {
		t.Fatal("satisfied after 1 of 2 creations")
	}
	e.Observe(replicaset.Observation{ReplicaSet: key, Kind: replicaset.PodCreated})
	if !e.Satisfied(key, t0) {
		t.Fatal("not satisfied after 2 of 2 creations")
	}
	e.ExpectDeletions(key, []types.UID{"a", "b"}, t0)
	del := func(uid types.UID) replicaset.Observation {
		return replicaset.Observation{ReplicaSet: key, Kind: replicaset.PodDeleted, Pod: uid}
	}
	e.Observe(del("a"), del("a"), del("unknown"))
	if got, _ := e.Get(key); got.Del != 1 {
		t.Errorf("Del after observing a twice and an unknown pod = %d; want 1", got.Del)
	}
	e.Observe(replicaset.Observation{ReplicaSet: key, Kind: replicaset.ReplicaSetGone})
	if _, ok := e.Get(key); ok {
		t.Error("expectation kept after ReplicaSetGone")
	}
	if s := del("a").String(); s != "ns/web: pod a deleted" {
		t.Errorf("String() = %q", s)
	}
}
