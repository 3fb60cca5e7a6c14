package deployment_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/rollout"
)

func rsNamed(ns, name string, owner *appsv1.Deployment) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	}
	return rs
}

// indexedWorld gives a world's ReplicaSets the indexed reads of
// deployment.ReplicaSetsByController (context-taking), and counts full listings.
type indexedWorld struct {
	w     *world
	lists int
}

func (x *indexedWorld) List(_ context.Context, namespace string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	x.lists++
	return x.w.List(namespace, sel)
}

func (x *indexedWorld) ListByController(_ context.Context, namespace string, uid types.UID) ([]*appsv1.ReplicaSet, error) {
	all, err := x.w.List(namespace, labels.Everything())
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(rs *appsv1.ReplicaSet) bool {
		ref := metav1.GetControllerOfNoCopy(rs)
		if uid == "" {
			return ref != nil
		}
		return ref == nil || ref.UID != uid
	}), nil
}

func (x *indexedWorld) Get(_ context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	x.w.mu.Lock()
	defer x.w.mu.Unlock()
	rs, ok := x.w.rss[key]
	if !ok {
		return nil, apierrors.NewNotFound(rsResource, key.Name)
	}
	return rs.DeepCopy(), nil
}

// TestReconcilerIndexedReads runs the same scenarios with a lister of the
// whole namespace and with the narrowed, indexed reads: every write,
// event and final object must be the same.
func TestReconcilerIndexedReads(t *testing.T) {
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", UID: "other-uid"}}
	scenarios := []struct {
		name  string
		setup func(w *world) types.NamespacedName
		steps func(w *world, key types.NamespacedName, sync func())
		check func(t *testing.T, w *world, key types.NamespacedName)
	}{{
		name: "create, then roll out an image change",
		setup: func(w *world) types.NamespacedName {
			for i := range 20 { // ReplicaSets of other Deployments, which the narrowed read skips
				rs := rsNamed("ns", fmt.Sprintf("other-%d", i), other)
				rs.Labels = map[string]string{"app": "web"} // even matching ones
				w.addReplicaSet(rs)
			}
			return deployment.KeyOf(w.addDeployment(newDeployment(10, "web:v1")))
		},
		steps: func(w *world, key types.NamespacedName, sync func()) {
			for range 3 {
				sync()
				w.settle()
			}
			w.edit(key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:v2" })
			for range 12 {
				sync()
				w.settle()
				w.dropTerminating()
			}
		},
	}, {
		name: "adopt a matching orphan, release an owned ReplicaSet that no longer matches",
		setup: func(w *world) types.NamespacedName {
			d := w.addDeployment(newDeployment(2, "web:v1"))
			tpl := d.Spec.Template.DeepCopy()
			w.addReplicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan", Labels: tpl.Labels},
				Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: tpl.Labels}, Template: *tpl}})
			stray := rsNamed("ns", "stray", d)
			stray.Labels = map[string]string{"app": "elsewhere"}
			stray.Spec.Replicas = ptr(int32(0))
			w.addReplicaSet(stray)
			return deployment.KeyOf(d)
		},
		steps: func(w *world, key types.NamespacedName, sync func()) {
			for range 3 {
				sync()
				w.settle()
			}
		},
		check: func(t *testing.T, w *world, key types.NamespacedName) {
			if !slices.ContainsFunc(w.writes, func(s string) bool { return s == "patch stray" }) ||
				!slices.ContainsFunc(w.writes, func(s string) bool { return s == "patch orphan" }) {
				t.Errorf("writes = %q; want the adoption and the release patches", w.writes)
			}
		},
	}, {
		name: "the new ReplicaSet's name is held by another owner's ReplicaSet",
		setup: func(w *world) types.NamespacedName {
			d := newDeployment(3, "web:v1")
			name := rollout.ReplicaSetName(d.Name, rollout.ComputeHash(&d.Spec.Template, nil))
			squatter := rsNamed("ns", name, other)
			squatter.Labels = map[string]string{"app": "other"}
			w.addReplicaSet(squatter)
			return deployment.KeyOf(w.addDeployment(d))
		},
		steps: func(w *world, key types.NamespacedName, sync func()) {
			for range 3 {
				sync()
				w.settle()
			}
		},
		check: func(t *testing.T, w *world, key types.NamespacedName) {
			d, _ := w.Get(key)
			if d.Status.CollisionCount == nil || *d.Status.CollisionCount != 1 {
				t.Errorf("collisionCount = %v; want 1", d.Status.CollisionCount)
			}
		},
	}, {
		name: "Recreate",
		setup: func(w *world) types.NamespacedName {
			d := newDeployment(4, "web:v1")
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			return deployment.KeyOf(w.addDeployment(d))
		},
		steps: func(w *world, key types.NamespacedName, sync func()) {
			for range 2 {
				sync()
				w.settle()
			}
			w.edit(key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:v2" })
			for range 5 {
				sync()
				w.settle()
				w.dropTerminating()
			}
		},
	}}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			run := func(indexed bool) (*world, *indexedWorld) {
				w := newWorld()
				key := sc.setup(w)
				cfg := w.config()
				x := &indexedWorld{w: w}
				if indexed {
					cfg.ReplicaSets = x
				}
				r := newReconcilerFor(t, cfg)
				sc.steps(w, key, func() {
					if _, err := r.Reconcile(context.Background(), key); err != nil {
						t.Fatalf("indexed=%v: Reconcile: %v", indexed, err)
					}
				})
				if sc.check != nil {
					sc.check(t, w, key)
				}
				return w, x
			}
			full, _ := run(false)
			narrow, x := run(true)
			if x.lists != 0 {
				t.Errorf("the indexed Reconciler listed the namespace %d times; want 0", x.lists)
			}
			// Within a sync, releases (of owned ReplicaSets) come before
			// adoptions (of orphans) with the narrowed read, but in listing
			// order with the full one; upstream's order is a map's.
			if diff := cmp.Diff(sortPatchRuns(full.writes), sortPatchRuns(narrow.writes)); diff != "" {
				t.Errorf("writes (-full +indexed):\n%s", diff)
			}
			if diff := cmp.Diff(full.events, narrow.events); diff != "" {
				t.Errorf("events (-full +indexed):\n%s", diff)
			}
			// The test world's settle visits ReplicaSets in map order, so
			// resourceVersions differ from run to run.
			noRV := cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion")
			if diff := cmp.Diff(full.deployments, narrow.deployments, noRV); diff != "" {
				t.Errorf("Deployments (-full +indexed):\n%s", diff)
			}
			if diff := cmp.Diff(full.rss, narrow.rss, noRV); diff != "" {
				t.Errorf("ReplicaSets (-full +indexed):\n%s", diff)
			}
			if len(full.writes) == 0 {
				t.Error("the scenario wrote nothing")
			}
		})
	}
}

// sortPatchRuns sorts each run of consecutive patch writes.
func sortPatchRuns(writes []string) []string {
	out := slices.Clone(writes)
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && strings.HasPrefix(out[j], "patch ") {
			j++
		}
		slices.Sort(out[i:j])
		i = max(j, i+1)
	}
	return out
}
