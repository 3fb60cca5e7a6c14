package controllerruntime_test

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ctrlkit/ctrlkit/controllerruntime"
	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/rollout"
	"github.com/ctrlkit/ctrlkit/shard"
)

// forgetCounter is a rate limiter that counts its Forget calls: the queue
// of a controller-runtime controller makes one after every successful
// sync, so a count above zero shows that Options.RateLimiter is the one
// the controllers use.
type forgetCounter struct {
	workqueue.TypedRateLimiter[crreconcile.Request]
	forgets atomic.Int64
}

func (f *forgetCounter) Forget(r crreconcile.Request) {
	f.forgets.Add(1)
	f.TypedRateLimiter.Forget(r)
}

// TestAdd runs controllerruntime.Add in a controller-runtime Manager on
// the bench's in-memory cluster, with the bench's own Deployment and
// ReplicaSet controllers off, so that the adapter's controllers do all the
// work (the kubelet and the garbage collector run). Each case creates
// three Deployments, rolls them out, then changes their image: those the
// options or the manager's cache leave to the controllers roll out to
// completion, within the bounds planner.Check checks; the others are never
// touched. Time is the bench's virtual time: the test waits for
// conditions, never for durations of the wall clock.
func TestAdd(t *testing.T) {
	web := labels.Set{"tier": "web"}
	limiter := &forgetCounter{TypedRateLimiter: workqueue.DefaultTypedControllerRateLimiter[crreconcile.Request]()}
	for _, tc := range []struct {
		name      string
		opts      controllerruntime.Options
		cache     cache.Options
		untouched []string // of the Deployments a/web, b/web, a/other
	}{
		{name: "defaults"},
		{
			name: "options",
			opts: controllerruntime.Options{Workers: 2, Namespace: "a", Selector: labels.SelectorFromSet(web),
				RateLimiter: limiter, BatchPeriod: 500 * time.Millisecond, BurstReplicas: 2},
			untouched: []string{"b/web", "a/other"},
		},
		{
			name:      "cache of namespace a",
			cache:     cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}}},
			untouched: []string{"b/web"},
		},
		{
			// A shard of the hash of namespace a alone, on the controllers
			// and on the cache (served by the bench's shardSelector).
			name:      "shard of namespace a",
			opts:      controllerruntime.Options{Shard: shardOf("a")},
			cache:     cache.Options{NewInformer: controllerruntime.ShardedInformers(shardOf("a"))},
			untouched: []string{"b/web"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clustertest.Test(t, clustertest.Options{Seed: 1, Disable: clustertest.DeploymentController | clustertest.ReplicaSetController},
				func(t *testing.T, c *clustertest.Cluster) {
					mgr := c.NewManager(manager.Options{Cache: tc.cache})
					if err := controllerruntime.Add(mgr, tc.opts); err != nil {
						t.Fatal(err)
					}
					c.Start(mgr)
					c.Advance(time.Second) // the caches sync, the controllers start
					// The bench requires namespaces, as a real cluster does.
					for _, ns := range []string{"a", "b"} {
						if err := c.Client().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
							t.Fatal(err)
						}
					}
					deployments := []*appsv1.Deployment{
						newDeployment("a", "web", web), newDeployment("b", "web", web), newDeployment("a", "other", nil),
					}
					for _, d := range deployments {
						if err := c.Client().Create(t.Context(), d); err != nil {
							t.Fatal(err)
						}
					}
					var managed []*appsv1.Deployment
					for _, d := range deployments {
						if !slices.Contains(tc.untouched, d.Namespace+"/"+d.Name) {
							managed = append(managed, d)
						}
					}
					c.MustRunUntil("rolled out", rolledOut(t, c, managed, "nginx:1.27"), time.Hour)
					for _, d := range deployments {
						setImage(t, c, d, "nginx:1.28")
					}
					c.MustRunUntil("image changed", rolledOut(t, c, managed, "nginx:1.28"), time.Hour)
					if err := c.Check(); err != nil {
						t.Error(err)
					}

					for _, d := range managed {
						var rss appsv1.ReplicaSetList
						if err := c.Client().List(t.Context(), &rss, client.InNamespace(d.Namespace)); err != nil {
							t.Fatal(err)
						}
						var revisions []string
						for _, rs := range rss.Items {
							if ref := metav1.GetControllerOf(&rs); ref != nil && ref.Name == d.Name {
								revisions = append(revisions, rs.Annotations[rollout.RevisionAnnotation]+":"+rs.Spec.Template.Spec.Containers[0].Image)
							}
						}
						slices.Sort(revisions)
						if want := []string{"1:nginx:1.27", "2:nginx:1.28"}; !slices.Equal(revisions, want) {
							t.Errorf("%s/%s: ReplicaSets (revision:image) %q; want %q", d.Namespace, d.Name, revisions, want)
						}
					}
					for _, name := range tc.untouched {
						ns, n, _ := strings.Cut(name, "/")
						var d appsv1.Deployment
						if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: n}, &d); err != nil {
							t.Fatal(err)
						}
						var rss appsv1.ReplicaSetList
						if err := c.Client().List(t.Context(), &rss, client.InNamespace(ns)); err != nil {
							t.Fatal(err)
						}
						for _, rs := range rss.Items {
							if ref := metav1.GetControllerOf(&rs); ref != nil && ref.Name == n {
								t.Errorf("%s: ReplicaSet %s created; want the Deployment untouched", name, rs.Name)
							}
						}
						if d.Status.ObservedGeneration != 0 {
							t.Errorf("%s: status written (observedGeneration %d); want the Deployment untouched", name, d.Status.ObservedGeneration)
						}
					}
					if tc.opts.RateLimiter != nil && limiter.forgets.Load() == 0 {
						t.Error("Options.RateLimiter was not used")
					}
				})
		})
	}
	// The syncs skipped while the cache lagged behind the controllers' own
	// writes are counted on the registry the Manager serves, as package
	// kube names them.
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, f := range families {
		if f.GetName() == "ctrlkit_syncs_skipped_total" {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					series = append(series, l.GetName()+"="+l.GetValue())
				}
			}
		}
	}
	slices.Sort(series)
	if want := []string{"controller=" + controllerruntime.DeploymentControllerName, "controller=" + controllerruntime.ReplicaSetControllerName}; !slices.Equal(series, want) {
		t.Errorf("ctrlkit_syncs_skipped_total series %q; want %q", series, want)
	}
}

// newDeployment returns a Deployment of 3 nginx:1.27 pods, rolled one at a
// time (maxSurge 1, maxUnavailable 0), with extra labels on itself and its
// pod template.
func newDeployment(namespace, name string, extra labels.Set) *appsv1.Deployment {
	ls := labels.Merge(labels.Set{"app": name}, extra)
	replicas := int32(3)
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: ls},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: ls},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
}

// setImage changes the image of Deployment d in the cluster.
func setImage(t *testing.T, c *clustertest.Cluster, d *appsv1.Deployment, image string) {
	t.Helper()
	var cur appsv1.Deployment
	if err := c.Client().Get(t.Context(), client.ObjectKeyFromObject(d), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = image
	if err := c.Client().Update(t.Context(), &cur); err != nil {
		t.Fatal(err)
	}
}

// rolledOut reports whether every Deployment of ds runs image and is
// rolled out at its current generation, as kubectl rollout status decides.
func rolledOut(t *testing.T, c *clustertest.Cluster, ds []*appsv1.Deployment, image string) func() bool {
	return func() bool {
		for _, d := range ds {
			var cur appsv1.Deployment
			if err := c.Client().Get(t.Context(), client.ObjectKeyFromObject(d), &cur); err != nil {
				t.Fatalf("get %s/%s: %v", d.Namespace, d.Name, err)
			}
			if cur.Spec.Template.Spec.Containers[0].Image != image {
				return false
			}
			if st, err := rollout.Status(&cur, 0); err != nil || !st.Done {
				return false
			}
		}
		return true
	}
}

// shardOf is the set of one namespace's hash.
func shardOf(ns string) shard.Set {
	h := shard.Hash(ns)
	return shard.MustSet(shard.Range{First: h, Last: h})
}
