package deployment_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
)

var exampleStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// exampleDeployment is "web" with n replicas of image; the in-memory API
// server applies the apps/v1 defaults.
func exampleDeployment(n int32, image string) *appsv1.Deployment {
	l := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}}},
		},
	}
}

// printReplicaSets prints the ReplicaSets of the cluster's default
// namespace, by name.
func printReplicaSets(ctx context.Context, c *memcluster.Cluster) {
	rss, _, err := c.ReplicaSets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	sort.Slice(rss, func(i, j int) bool { return rss[i].Name < rss[j].Name })
	for _, rs := range rss {
		fmt.Printf("rs %s: revision %s, %d replicas, %d ready\n", rs.Name,
			rs.Annotations[rollout.RevisionAnnotation], *rs.Spec.Replicas, rs.Status.ReadyReplicas)
	}
}

// Both controllers on an in-memory cluster in virtual time: an image
// update rolls out.
func ExampleNewController() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	fc := clock.NewFake(exampleStart)
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1})
	dInf := informer.New(c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: fc})
	rsInf := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	podInf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	client := memcluster.ControllerClient{Cluster: c}

	dc, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Client: client, Clock: fc, Workers: 2,
	})
	if err != nil {
		panic(err)
	}
	rsc, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: rsInf, Pods: podInf, Client: client, Clock: fc, Workers: 2,
	})
	if err != nil {
		panic(err)
	}
	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{}) // before anything runs: see NewKubelet
	for _, run := range []func(context.Context) error{dInf.Run, rsInf.Run, podInf.Run, dc.Run, rsc.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				panic(err)
			}
		})
	}
	wg.Go(func() { kubelet.Run(ctx) })

	if _, err := c.Deployments("default").Create(ctx, exampleDeployment(3, "nginx:1.27"), metav1.CreateOptions{}); err != nil {
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
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
	if _, err := c.Deployments("default").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		panic(err)
	}
	if err := c.RunUntil(ctx, rolledOut("nginx:1.28"), time.Hour); err != nil {
		panic(err)
	}
	printReplicaSets(ctx, c)
	// Output:
	// rs web-5c8597c5fb: revision 1, 0 replicas, 0 ready
	// rs web-7549484477: revision 2, 3 replicas, 3 ready
}

// One Reconcile of a new Deployment, reading the cluster directly (an
// informer cache in production): it creates the first ReplicaSet.
func ExampleReconciler() {
	ctx := context.Background()
	c := memcluster.New(memcluster.Config{Clock: clock.NewFake(exampleStart)})
	if _, err := c.Deployments("default").Create(ctx, exampleDeployment(3, "nginx:1.27"), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	r, err := deployment.NewReconciler(deployment.ReconcilerConfig{
		Deployments: reconcile.GetterFunc[*appsv1.Deployment](func(ctx context.Context, k types.NamespacedName) (*appsv1.Deployment, error) {
			return c.Deployments(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		}),
		ReplicaSets: reconcile.ListerFunc[*appsv1.ReplicaSet](func(ctx context.Context, ns string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
			rss, _, err := c.ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
			return rss, err
		}),
		Client:      memcluster.ControllerClient{Cluster: c},
		Clock:       clock.NewFake(exampleStart),
		EagerStatus: true,
	})
	if err != nil {
		panic(err)
	}
	res, err := r.Reconcile(ctx, types.NamespacedName{Namespace: "default", Name: "web"})
	fmt.Println(res, err)
	printReplicaSets(ctx, c)
	d, _ := c.Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	fmt.Println(rollout.GetCondition(d.Status, appsv1.DeploymentProgressing).Reason)
	// Output:
	// {0s} <nil>
	// rs web-5c8597c5fb: revision 1, 3 replicas, 0 ready
	// NewReplicaSetCreated
}

// Decide with Sync, then execute the plan with WritePlan.
func ExampleWritePlan() {
	ctx := context.Background()
	c := memcluster.New(memcluster.Config{Clock: clock.NewFake(exampleStart)})
	d, err := c.Deployments("default").Create(ctx, exampleDeployment(2, "nginx:1.27"), metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	plan, err := deployment.Sync(deployment.State{Deployment: d}, exampleStart)
	if err != nil {
		panic(err)
	}
	var events []string
	rec := deployment.EventRecorderFunc(func(_ runtime.Object, typ, reason, msg string) {
		events = append(events, typ+" "+reason+": "+msg)
	})
	applied, err := deployment.WritePlan(ctx, memcluster.ControllerClient{Cluster: c}, rec, plan)
	fmt.Println("applied", applied, "steps, err", err)
	printReplicaSets(ctx, c)
	fmt.Println(events)
	// Output:
	// applied 3 steps, err <nil>
	// rs web-5c8597c5fb: revision 1, 2 replicas, 0 ready
	// [Normal ScalingReplicaSet: Scaled up replica set web-5c8597c5fb from 0 to 2]
}
