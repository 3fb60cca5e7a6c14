package examples_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// The whole loop, by hand: in-memory API → informers → work queue →
// deployment.Reconciler, with the packaged ReplicaSet controller and a
// kubelet alongside, all on one virtual clock.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	// 1. The API server, on a virtual clock, with a kubelet that starts
	// pods in a second and makes them Ready a second later.
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1})
	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{})

	// 2. One informer per kind: a cache kept up to date by list and watch.
	deployments := informer.New(c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: fc})
	replicaSets := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	pods := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})

	// 3. A queue of Deployment keys. Handlers turn events into keys: a
	// Deployment's own, or the owner of a ReplicaSet.
	queue := workqueue.New(workqueue.Config[types.NamespacedName]{Name: "deployments", Clock: fc})
	enqueue := func(d *appsv1.Deployment) { queue.Add(types.NamespacedName{Namespace: d.Namespace, Name: d.Name}) }
	enqueueOwner := func(rs *appsv1.ReplicaSet) {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
			queue.Add(types.NamespacedName{Namespace: rs.Namespace, Name: ref.Name})
		}
	}
	must(deployments.AddHandler(informer.Handler[*appsv1.Deployment]{
		OnAdd:    enqueue,
		OnUpdate: func(_, d *appsv1.Deployment) { enqueue(d) },
		OnDelete: func(d informer.Deleted[*appsv1.Deployment]) { queue.Add(d.Key) },
		// The worker starts once the caches are synced: from then on, the
		// queued keys are work the virtual clock waits for, even before
		// the worker's goroutine has run (see workqueue.Queue.Serve).
		OnSynced: queue.Serve,
	}))
	must(replicaSets.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
		OnAdd:    enqueueOwner,
		OnUpdate: func(_, rs *appsv1.ReplicaSet) { enqueueOwner(rs) },
		OnDelete: func(d informer.Deleted[*appsv1.ReplicaSet]) { enqueueOwner(d.Obj) },
	}))

	// 4. The Reconciler reads the caches and writes through the API.
	client := memcluster.ControllerClient{Cluster: c}
	reconciler := &deployment.Reconciler{
		Deployments: deployments.Cache(), ReplicaSets: replicaSets.Cache(), Pods: pods.Cache(),
		Client: client, Clock: fc,
	}

	// 5. The worker: Get, reconcile, then Forget and requeue as the Result
	// asks, or retry with backoff; Done in every case.
	worker := func() {
		for {
			key, shutdown := queue.Get()
			if shutdown {
				return
			}
			res, err := reconciler.Reconcile(ctx, key)
			switch {
			case err == nil:
				queue.Forget(key)
				if res.RequeueAfter > 0 {
					queue.AddAfter(key, res.RequeueAfter)
				}
			case errors.Is(err, deployment.ErrTerminal):
				queue.Forget(key)
			default:
				queue.AddRateLimited(key)
			}
			queue.Done(key) // last: what the sync started is accounted for
		}
	}
	// The queue and informers run on the cluster's fake clock, so they
	// tell it about their work: it moves time only when none is left.

	// The ReplicaSet controller, packaged: the same loop, ready made.
	rsController, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: replicaSets, Pods: pods, Client: client, Clock: fc,
	})
	if err != nil {
		panic(err)
	}

	// Start everything; it all stops when ctx ends.
	for _, run := range []func(context.Context) error{deployments.Run, replicaSets.Run, pods.Run, rsController.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				panic(err)
			}
		})
	}
	wg.Go(func() { kubelet.Run(ctx) })
	wg.Go(func() {
		<-deployments.Synced()
		<-replicaSets.Synced()
		<-pods.Synced()
		worker()
	})
	wg.Go(func() { <-ctx.Done(); queue.ShutDown() })

	// Create a Deployment, then update its image; run the virtual clock
	// until each rollout is complete.
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	if _, err := c.Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	rolledOut := func(image string) func() bool {
		return func() bool {
			d, err := c.Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil || d.Spec.Template.Spec.Containers[0].Image != image {
				return false
			}
			st, err := rollout.Status(d, 0)
			return err == nil && st.Done
		}
	}
	if err := c.RunUntil(ctx, rolledOut("nginx:1.27"), time.Hour); err != nil {
		panic(err)
	}
	fmt.Print(describe(ctx, c))

	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
	if _, err := c.Deployments("default").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		panic(err)
	}
	if err := c.RunUntil(ctx, rolledOut("nginx:1.28"), time.Hour); err != nil {
		panic(err)
	}
	fmt.Print(describe(ctx, c))
	// Output:
	// deployment web: image nginx:1.27, 3 updated, 3 available
	//   rs web-5c8597c5fb: revision 1, image nginx:1.27, 3 replicas
	// deployment web: image nginx:1.28, 3 updated, 3 available
	//   rs web-5c8597c5fb: revision 1, image nginx:1.27, 0 replicas
	//   rs web-7549484477: revision 2, image nginx:1.28, 3 replicas
}

// describe prints the Deployment's status and its ReplicaSets.
func describe(ctx context.Context, c *memcluster.Cluster) string {
	d, err := c.Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	rss, _, err := c.ReplicaSets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	s := d.Status
	fmt.Fprintf(&b, "deployment %s: image %s, %d updated, %d available\n", d.Name, d.Spec.Template.Spec.Containers[0].Image, s.UpdatedReplicas, s.AvailableReplicas)
	rss = rollout.OwnedReplicaSets(d, rss)
	slices.SortFunc(rss, func(a, b *appsv1.ReplicaSet) int {
		return strings.Compare(a.Annotations[rollout.RevisionAnnotation], b.Annotations[rollout.RevisionAnnotation])
	})
	for _, rs := range rss {
		fmt.Fprintf(&b, "  rs %s: revision %s, image %s, %d replicas\n", rs.Name, rs.Annotations[rollout.RevisionAnnotation],
			rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas)
	}
	return b.String()
}

func must[T any](_ T, err error) {
	if err != nil {
		panic(err)
	}
}

func ptr[T any](v T) *T { return &v }
