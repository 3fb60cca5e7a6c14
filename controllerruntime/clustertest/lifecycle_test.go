package clustertest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// The lifecycle of objects on the bench, through client-go and
// controller-runtime: eviction with a PodDisruptionBudget, pagination,
// namespace deletion under an informer, foreground deletion.

// webPods lists the pods of the web Deployment.
func webPods(t *testing.T, c *clustertest.Cluster) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.Client().List(t.Context(), &pods, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func TestEvictionWithBudget(t *testing.T) {
	clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
		ctx := t.Context()
		d := webDeployment("web", 3, "nginx:1.27")
		if err := c.Client().Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("web rolled out", rolledOut(t, c, client.ObjectKeyFromObject(d)), time.Hour)
		two := intstr.FromInt32(2)
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: d.Spec.Selector}}
		if err := c.Client().Create(ctx, pdb); err != nil {
			t.Fatal(err)
		}
		allowed := func(n int32) func() bool {
			return func() bool {
				if err := c.Client().Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
					t.Fatal(err)
				}
				return pdb.Status.DisruptionsAllowed == n && pdb.Status.ObservedGeneration == pdb.Generation
			}
		}
		c.MustRunUntil("one disruption allowed", allowed(1), time.Minute)
		pods := webPods(t, c)
		cs := kubernetes.NewForConfigOrDie(c.Config())
		// client-go's Evict, as kubectl drain sends it.
		if err := cs.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pods[0].Name, Namespace: "default"}}); err != nil {
			t.Fatalf("first eviction: %v", err)
		}
		var first corev1.Pod
		if err := c.Client().Get(ctx, client.ObjectKeyFromObject(&pods[0]), &first); err != nil {
			t.Fatal(err)
		}
		if last := first.Status.Conditions[len(first.Status.Conditions)-1]; first.DeletionTimestamp == nil || last.Type != corev1.DisruptionTarget {
			t.Errorf("evicted pod: deletionTimestamp %v, last condition %s; want terminating with DisruptionTarget", first.DeletionTimestamp, last.Type)
		}
		// controller-runtime's eviction subresource: the budget is spent
		// until the replacement pod is ready.
		second := pods[1].DeepCopy()
		err := c.Client().SubResource("eviction").Create(ctx, second, &policyv1.Eviction{})
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("second eviction at once: %v; want 429 TooManyRequests", err)
		}
		c.MustRunUntil("the budget allows one again", allowed(1), time.Hour)
		if err := c.Client().SubResource("eviction").Create(ctx, second, &policyv1.Eviction{}); err != nil {
			t.Fatalf("second eviction once the replacement is ready: %v", err)
		}
		c.MustRunUntil("web rolled out again, the evicted pods gone", func() bool {
			for _, p := range webPods(t, c) {
				if p.Name == pods[0].Name || p.Name == pods[1].Name {
					return false
				}
			}
			return rolledOut(t, c, client.ObjectKeyFromObject(d))()
		}, time.Hour)
	})
}

func TestPagerOnTheBench(t *testing.T) {
	clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
		ctx := t.Context()
		for i := range 7 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "default"}}
			if err := c.Client().Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
		cs := kubernetes.NewForConfigOrDie(c.Config())
		var mu sync.Mutex
		var calls []string
		p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			mu.Lock()
			calls = append(calls, fmt.Sprintf("limit=%d continue=%t", opts.Limit, opts.Continue != ""))
			mu.Unlock()
			return cs.CoreV1().ConfigMaps("default").List(ctx, opts)
		})
		p.PageSize = 3
		n := 0
		if err := p.EachListItem(ctx, metav1.ListOptions{}, func(runtime.Object) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		want := []string{"limit=3 continue=false", "limit=3 continue=true", "limit=3 continue=true"}
		if n != 7 || fmt.Sprint(calls) != fmt.Sprint(want) {
			t.Errorf("pager: %d items in calls %v; want 7 in %v", n, calls, want)
		}
		// controller-runtime's List with Limit and Continue.
		var page corev1.ConfigMapList
		if err := c.Client().List(ctx, &page, client.InNamespace("default"), client.Limit(5)); err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 5 || page.Continue == "" || page.RemainingItemCount == nil || *page.RemainingItemCount != 2 {
			t.Errorf("first page: %d items, continue %q, remaining %v", len(page.Items), page.Continue, page.RemainingItemCount)
		}
		if err := c.Client().List(ctx, &page, client.InNamespace("default"), client.Limit(5), client.Continue(page.Continue)); err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 2 || page.Continue != "" {
			t.Errorf("second page: %d items, continue %q; want 2, the last", len(page.Items), page.Continue)
		}
	})
}

func TestNamespaceDeletionUnderAnInformer(t *testing.T) {
	clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
		ctx := t.Context()
		if err := c.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}); err != nil {
			t.Fatal(err)
		}
		d := webDeployment("web", 3, "nginx:1.27")
		d.Namespace = "team"
		if err := c.Client().Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("web rolled out", rolledOut(t, c, client.ObjectKeyFromObject(d)), time.Hour)

		cs := kubernetes.NewForConfigOrDie(c.Config())
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("team"))
		podInformer := factory.Core().V1().Pods().Informer()
		var mu sync.Mutex
		deleted := 0
		if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) {
			mu.Lock()
			deleted++
			mu.Unlock()
		}}); err != nil {
			t.Fatal(err)
		}
		fieldInformer := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("team"),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "status.phase=Running" })).Core().V1().Pods().Informer()
		stop := make(chan struct{})
		defer close(stop)
		factory.Start(stop)
		go fieldInformer.Run(stop)
		c.MustRunUntil("informers synced", func() bool { return podInformer.HasSynced() && fieldInformer.HasSynced() }, time.Minute)
		if n := len(fieldInformer.GetStore().List()); n != 3 {
			t.Errorf("running pods seen through a field selector: %d; want 3", n)
		}

		if err := c.Client().Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}); err != nil {
			t.Fatal(err)
		}
		err := c.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "team"}})
		if !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			t.Errorf("create in the terminating namespace: %v; want Forbidden with the NamespaceTerminating cause", err)
		}
		c.MustRunUntil("namespace team gone", func() bool {
			err := c.Client().Get(ctx, client.ObjectKey{Name: "team"}, &corev1.Namespace{})
			return apierrors.IsNotFound(err)
		}, time.Hour)
		mu.Lock()
		defer mu.Unlock()
		if n := len(podInformer.GetStore().List()); n != 0 || deleted != 3 {
			t.Errorf("informer after the namespace went: %d pods, %d deletions seen; want 0 and 3", n, deleted)
		}
		if n := len(fieldInformer.GetStore().List()); n != 0 {
			t.Errorf("field-selected informer after the namespace went: %d pods; want 0", n)
		}
	})
}

func TestForegroundDeletionOnTheBench(t *testing.T) {
	clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
		ctx := t.Context()
		d := webDeployment("web", 2, "nginx:1.27")
		if err := c.Client().Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("web rolled out", rolledOut(t, c, client.ObjectKeyFromObject(d)), time.Hour)
		if err := c.Client().Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		var got appsv1.Deployment
		if err := c.Client().Get(ctx, client.ObjectKeyFromObject(d), &got); err != nil {
			t.Fatalf("deployment right after a foreground delete: %v; want it waiting for its pods", err)
		}
		if got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || got.Finalizers[0] != metav1.FinalizerDeleteDependents {
			t.Errorf("deployment = deletionTimestamp %v, finalizers %v; want deleting with foregroundDeletion", got.DeletionTimestamp, got.Finalizers)
		}
		c.MustRunUntil("deployment and pods gone", func() bool {
			err := c.Client().Get(ctx, client.ObjectKeyFromObject(d), &got)
			return apierrors.IsNotFound(err) && len(webPods(t, c)) == 0
		}, time.Hour)
	})
}
