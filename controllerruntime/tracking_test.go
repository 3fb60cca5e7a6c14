package controllerruntime

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ctrlkit/ctrlkit/internal/writes"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// laggingCache is a manager's cache that has not seen the ReplicaSets of
// the server yet: it hides each one until the test delivers its event.
// Everything else it reads from the server as it is.
type laggingCache struct {
	client.Reader

	mu   sync.Mutex
	seen map[types.UID]bool
}

func (c *laggingCache) deliver(uids ...types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, uid := range uids {
		c.seen[uid] = true
	}
}

func (c *laggingCache) hidden(rs *appsv1.ReplicaSet) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.seen[rs.UID]
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if rs, ok := obj.(*appsv1.ReplicaSet); ok && c.hidden(rs) {
		return apierrors.NewNotFound(appsv1.Resource("replicasets"), key.Name)
	}
	return nil
}

func (c *laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	if l, ok := list.(*appsv1.ReplicaSetList); ok {
		l.Items = slices.DeleteFunc(l.Items, func(rs appsv1.ReplicaSet) bool { return c.hidden(&rs) })
	}
	return nil
}

// skippedTotal reads ctrlkit_syncs_skipped_total{controller=name} from
// controller-runtime's metrics registry (the one a Manager serves).
func skippedTotal(t *testing.T, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != skippedSyncsName {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsOf(m)["controller"] == name {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s{controller=%q} is not registered on controller-runtime's metrics.Registry", skippedSyncsName, name)
	return 0
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestDeploymentWaitsForItsOwnCreates is the packaged controller's
// regression test of the same name on the controller-runtime path (docs/fidelity.md,
// "Deliberate differences", first item). A sync that runs before the
// manager's cache has the ReplicaSet the last sync created must not take
// it for missing: with a new template by then it would create a second
// ReplicaSet at full size, numbered from a history without the first. The
// sync is skipped (and counted) until the cache has it, or until a live
// read says it is gone; a failed create is settled the same way.
func TestDeploymentWaitsForItsOwnCreates(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		create  func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error
		failed  int  // 1: the first create did not happen
		deleted bool // the created ReplicaSet is deleted before the cache sees it
		waits   bool // the sync on the new template is skipped
	}{
		{name: "created, cache late", waits: true},
		{name: "response lost, cache late", waits: true,
			create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := c.Create(ctx, obj, opts...); err != nil {
					return err
				}
				return apierrors.NewTimeoutError("response lost", 1)
			}},
		{name: "deleted before the cache saw it", deleted: true},
		{name: "create failed", failed: 1, create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return apierrors.NewServiceUnavailable("try again")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := recreateDeployment("web", 3, "web:v1")
			key := client.ObjectKeyFromObject(d)
			server := fake.NewClientBuilder().
				WithIndex(&corev1.Pod{}, ControllerUIDField, controllerUID).
				WithIndex(&corev1.Pod{}, OrphanField, orphan).
				WithIndex(&appsv1.ReplicaSet{}, ControllerUIDField, controllerUID).
				WithIndex(&appsv1.ReplicaSet{}, OrphanField, orphan).
				WithStatusSubresource(&appsv1.ReplicaSet{}, &appsv1.Deployment{}).
				WithObjects(d).
				WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					obj.SetUID(types.UID("uid-" + obj.GetName())) // the fake client sets none
					if _, ok := obj.(*appsv1.ReplicaSet); ok && tc.create != nil {
						create := tc.create
						tc.create = nil // the first create only
						return create(ctx, c, obj, opts...)
					}
					return c.Create(ctx, obj, opts...)
				}}).Build()
			cache := &laggingCache{Reader: server, seen: map[types.UID]bool{}}
			skipped, err := skippedSyncs(DeploymentControllerName)
			if err != nil {
				t.Fatal(err)
			}
			s, err := newDeploymentSync(deploymentSyncConfig{
				Cache: cache, Client: server, Live: server, Marks: newWriteMarks(cache), Skipped: skipped,
			})
			if err != nil {
				t.Fatal(err)
			}
			replicaSets := func() []appsv1.ReplicaSet {
				t.Helper()
				var l appsv1.ReplicaSetList
				if err := server.List(ctx, &l); err != nil {
					t.Fatal(err)
				}
				return l.Items
			}
			before := skippedTotal(t, DeploymentControllerName)

			// The first sync creates ReplicaSet A (unless the create
			// fails); the cache does not see it.
			_, _ = s.sync(ctx, key) // a failed create fails the sync
			if n, want := len(replicaSets()), 1-tc.failed; n != want {
				t.Fatalf("first sync left %d ReplicaSets; want %d", n, want)
			}
			if tc.deleted {
				if err := server.Delete(ctx, &replicaSets()[0]); err != nil {
					t.Fatal(err)
				}
			}

			// The template changes and the Deployment is synced again.
			if err := server.Get(ctx, key, d); err != nil {
				t.Fatal(err)
			}
			d.Spec.Template.Spec.Containers[0].Image = "web:v2"
			if err := server.Update(ctx, d); err != nil {
				t.Fatal(err)
			}
			if _, err := s.sync(ctx, key); err != nil {
				t.Fatalf("sync on the new template: %v", err)
			}
			got := replicaSets()
			if len(got) != 1 {
				t.Fatalf("after the sync on the new template: %d ReplicaSets; want 1", len(got))
			}
			wantImage, wantSkipped := "web:v2", 0.0 // nothing to wait for: created the new one
			if tc.waits {
				wantImage, wantSkipped = "web:v1", 1
			}
			if img := got[0].Spec.Template.Spec.Containers[0].Image; img != wantImage {
				t.Errorf("ReplicaSet image = %s; want %s", img, wantImage)
			}
			if n := skippedTotal(t, DeploymentControllerName) - before; n != wantSkipped {
				t.Errorf("%s{controller=%q} went up by %v; want %v", skippedSyncsName, DeploymentControllerName, n, wantSkipped)
			}
			if !tc.waits {
				return
			}

			// A's event arrives (and then every ReplicaSet's, with a status
			// that has observed its spec, as the ReplicaSet controller
			// writes it, before each sync): the old ReplicaSet is scaled
			// down first, and only then is the new one created, as
			// revision 2.
			for range 4 {
				for _, rs := range replicaSets() {
					rs.Status.ObservedGeneration = rs.Generation
					if err := server.Status().Update(ctx, &rs); err != nil {
						t.Fatal(err)
					}
					cache.deliver(rs.UID)
				}
				if _, err := s.sync(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
			revisions := map[string]string{}
			for _, rs := range replicaSets() {
				revisions[rs.Spec.Template.Spec.Containers[0].Image] = fmt.Sprintf("%s replicas=%d", rs.Annotations[rollout.RevisionAnnotation], *rs.Spec.Replicas)
			}
			want := map[string]string{"web:v1": "1 replicas=0", "web:v2": "2 replicas=3"}
			if diff := cmp.Diff(want, revisions); diff != "" {
				t.Errorf("ReplicaSets by image (-want +got):\n%s", diff)
			}
		})
	}
}

func recreateDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

// frozenCache is a manager's cache that still holds a copy of each object
// taken when the test says so.
type frozenCache struct {
	client.Reader
	mu   sync.Mutex
	objs map[types.NamespacedName]*appsv1.ReplicaSet
}

func (c *frozenCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	rs, ok := c.objs[key]
	c.mu.Unlock()
	if out, isRS := obj.(*appsv1.ReplicaSet); isRS && ok {
		rs.DeepCopyInto(out)
		return nil
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *frozenCache) freeze(rs *appsv1.ReplicaSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objs[client.ObjectKeyFromObject(rs)] = rs.DeepCopy()
}

// The controller-runtime path of the packaged controller's
// TestControllerWaitsForItsFailedScales (e2e soak seed 3878): a
// ReplicaSet update that fails may have happened, and while a live read
// finds a newer version than the cache's, the Deployment's next sync
// waits, and so does the ReplicaSet's. A write that did not happen, or
// one the cache has caught up with, is nothing to wait for.
func TestDeploymentWaitsForItsFailedWrites(t *testing.T) {
	for _, tc := range []struct {
		name     string
		happened bool
		waits    bool
	}{
		{name: "response lost", happened: true, waits: true},
		{name: "did not happen", happened: false, waits: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d := recreateDeployment("web", 3, "web:v1")
			replicas := int32(3)
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-1"}, Spec: appsv1.ReplicaSetSpec{Replicas: &replicas}}
			server := fake.NewClientBuilder().WithObjects(d, rs).
				WithInterceptorFuncs(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if tc.happened {
						if err := c.Update(ctx, obj, opts...); err != nil {
							return err
						}
					}
					return apierrors.NewTimeoutError("response lost", 1)
				}}).Build()
			var cur appsv1.ReplicaSet
			if err := server.Get(ctx, client.ObjectKeyFromObject(rs), &cur); err != nil {
				t.Fatal(err)
			}
			cache := &frozenCache{Reader: server, objs: map[types.NamespacedName]*appsv1.ReplicaSet{}}
			cache.freeze(&cur)
			marks := newWriteMarks(cache)
			tracker := writes.New(marks, live(server))
			c := writes.TrackDeployments(Writer{Client: server, Live: server}, tracker)
			dkey := client.ObjectKeyFromObject(d)
			sctx := writes.Syncing(ctx, dkey)
			up := cur.DeepCopy()
			*up.Spec.Replicas = 6
			if _, err := c.UpdateReplicaSet(sctx, up); err == nil {
				t.Fatal("UpdateReplicaSet: no error; want the injected timeout")
			}
			behind, err := tracker.Behind(ctx, dkey)
			if err != nil {
				t.Fatal(err)
			}
			rsKey := markKey{key: client.ObjectKeyFromObject(rs)}
			if behind != tc.waits || marks.Behind(ctx, rsKey.kind, rsKey.key) != tc.waits {
				t.Fatalf("after the failed update: Deployment behind %t, ReplicaSet behind %t; want %t", behind, marks.Behind(ctx, rsKey.kind, rsKey.key), tc.waits)
			}
			// The event arrives.
			if err := server.Get(ctx, client.ObjectKeyFromObject(rs), &cur); err != nil {
				t.Fatal(err)
			}
			cache.freeze(&cur)
			if behind, err := tracker.Behind(ctx, dkey); err != nil || behind || marks.Behind(ctx, rsKey.kind, rsKey.key) {
				t.Errorf("after the event: Deployment behind %t (%v), ReplicaSet behind %t; want neither", behind, err, marks.Behind(ctx, rsKey.kind, rsKey.key))
			}
		})
	}
}
