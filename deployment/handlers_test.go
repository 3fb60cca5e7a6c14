package deployment_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// TestEventRules checks the Deployment controller's event-handler rules
// against upstream v1.37 (pkg/controller/deployment/deployment_controller.go,
// shared/spec/upstream-behaviour.md §1.N), one row per rule.
func TestEventRules(t *testing.T) {
	dep := func(name, uid string, sel map[string]string, strategy appsv1.DeploymentStrategyType) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: "1"}}
		if sel != nil {
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
		}
		d.Spec.Strategy.Type = strategy
		return d
	}
	web := dep("web", "web-uid", map[string]string{"app": "web"}, appsv1.RollingUpdateDeploymentStrategyType)
	web2 := dep("web2", "web2-uid", map[string]string{"tier": "front"}, appsv1.RollingUpdateDeploymentStrategyType)
	db := dep("db", "db-uid", map[string]string{"app": "db"}, appsv1.RecreateDeploymentStrategyType)
	all := dep("all", "all-uid", map[string]string{}, appsv1.RollingUpdateDeploymentStrategyType) // empty selector: selects nothing here
	ref := func(kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr(true)}}
	}
	rs := func(name, rv string, lbls map[string]string, owners []metav1.OwnerReference, edit ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"),
			ResourceVersion: rv, Labels: lbls, OwnerReferences: owners, Generation: 1}}
		for _, e := range edit {
			e(r)
		}
		return r
	}
	webRS := rs("web-1", "1", map[string]string{"app": "web"}, ref("Deployment", "web", "web-uid"))
	dbRS := rs("db-1", "1", map[string]string{"app": "db"}, ref("Deployment", "db", "db-uid"))
	pod := func(owners []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p-uid", OwnerReferences: owners}}
	}
	deleting := func(r *appsv1.ReplicaSet) { r.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }

	ds, err := reconcile.FromCache(informer.NewCache(informer.CacheConfig[*appsv1.Deployment]{}))
	if err != nil {
		t.Fatal(err)
	}
	rss, err := reconcile.FromCache(informer.NewCache(informer.CacheConfig[*appsv1.ReplicaSet]{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*appsv1.Deployment{web, web2, db, all} {
		if err := ds.Cache().Add(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []*appsv1.ReplicaSet{webRS, dbRS} {
		if err := rss.Cache().Add(r); err != nil {
			t.Fatal(err)
		}
	}
	rules := deployment.EventRules{Deployments: ds, ReplicaSets: rss}
	ctx := context.Background()
	now := func(names ...string) []reconcile.Enqueue {
		var out []reconcile.Enqueue
		for _, n := range names {
			out = append(out, reconcile.Enqueue{Key: types.NamespacedName{Namespace: "ns", Name: n}})
		}
		return out
	}
	batched := func(name string) []reconcile.Enqueue {
		return []reconcile.Enqueue{{Key: types.NamespacedName{Namespace: "ns", Name: name}, Batch: true}}
	}
	bumped := func(r *appsv1.ReplicaSet, edit ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		c := r.DeepCopy()
		c.ResourceVersion = "2"
		for _, e := range edit {
			e(c)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		got  []reconcile.Enqueue
		want []reconcile.Enqueue
	}{
		{"add Deployment", rules.DeploymentAdded(ctx, web), now("web")},
		{"update Deployment, resync included", rules.DeploymentUpdated(ctx, web, web), now("web")},
		{"delete Deployment", rules.DeploymentDeleted(ctx, web), now("web")},

		{"add RS: its controller", rules.ReplicaSetAdded(ctx, webRS), now("web")},
		{"add RS: controller UID differs", rules.ReplicaSetAdded(ctx, rs("x", "1", nil, ref("Deployment", "web", "other-uid"))), nil},
		{"add RS: controller not a Deployment", rules.ReplicaSetAdded(ctx, rs("x", "1", nil, ref("StatefulSet", "web", "web-uid"))), nil},
		{"add RS: controller not cached", rules.ReplicaSetAdded(ctx, rs("x", "1", nil, ref("Deployment", "gone", "gone-uid"))), nil},
		{"add RS being deleted: as a delete", rules.ReplicaSetAdded(ctx, rs("x", "1", nil, ref("Deployment", "db", "db-uid"), deleting)), now("db")},
		{"add RS being deleted, orphan: nobody", rules.ReplicaSetAdded(ctx, rs("x", "1", map[string]string{"app": "web"}, nil, deleting)), nil},
		{"add orphan RS: every Deployment selecting it", rules.ReplicaSetAdded(ctx, rs("x", "1", map[string]string{"app": "web", "tier": "front"}, nil)), now("web", "web2")},
		{"add orphan RS without labels: nobody", rules.ReplicaSetAdded(ctx, rs("x", "1", nil, nil)), nil},

		{"update RS: resync ignored", rules.ReplicaSetUpdated(ctx, webRS, webRS), nil},
		{"update RS: status only, batched", rules.ReplicaSetUpdated(ctx, webRS, bumped(webRS)), batched("web")},
		{"update RS: spec (generation)", rules.ReplicaSetUpdated(ctx, webRS, bumped(webRS, func(r *appsv1.ReplicaSet) { r.Generation = 2 })), now("web")},
		{"update RS: labels", rules.ReplicaSetUpdated(ctx, webRS, bumped(webRS, func(r *appsv1.ReplicaSet) { r.Labels = map[string]string{"app": "web", "x": "y"} })), now("web")},
		{"update RS: being deleted", rules.ReplicaSetUpdated(ctx, webRS, bumped(webRS, deleting)), now("web")},
		{"update RS: controller changed, old and new owner",
			rules.ReplicaSetUpdated(ctx, webRS, bumped(webRS, func(r *appsv1.ReplicaSet) { r.OwnerReferences = ref("Deployment", "db", "db-uid") })),
			now("web", "db")},
		{"update RS: released, old owner and the selecting Deployments",
			rules.ReplicaSetUpdated(ctx, webRS, bumped(webRS, func(r *appsv1.ReplicaSet) { r.OwnerReferences = nil })),
			now("web", "web")},
		{"update orphan RS: labels now match",
			rules.ReplicaSetUpdated(ctx, rs("x", "1", map[string]string{"app": "none"}, nil), rs("x", "2", map[string]string{"tier": "front"}, nil)),
			now("web2")},
		{"update orphan RS: labels unchanged",
			rules.ReplicaSetUpdated(ctx, rs("x", "1", map[string]string{"app": "web"}, nil), rs("x", "2", map[string]string{"app": "web"}, nil)), nil},

		{"delete RS: its controller", rules.ReplicaSetDeleted(ctx, webRS), now("web")},
		{"delete orphan RS: nobody", rules.ReplicaSetDeleted(ctx, rs("x", "1", map[string]string{"app": "web"}, nil)), nil},

		{"delete pod: Recreate Deployment, batched", rules.PodDeleted(ctx, pod(ref("ReplicaSet", "db-1", "db-1-uid"))), batched("db")},
		{"delete pod: RollingUpdate Deployment, nobody", rules.PodDeleted(ctx, pod(ref("ReplicaSet", "web-1", "web-1-uid"))), nil},
		{"delete pod: ReplicaSet UID differs", rules.PodDeleted(ctx, pod(ref("ReplicaSet", "db-1", "other"))), nil},
		{"delete pod: controller not a ReplicaSet", rules.PodDeleted(ctx, pod(ref("StatefulSet", "db-1", "db-1-uid"))), nil},
		{"delete orphan pod: nobody", rules.PodDeleted(ctx, pod(nil)), nil},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
