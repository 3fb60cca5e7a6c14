package memcluster_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/memcluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func webDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}

// The cluster applies the apps/v1 defaults and sets the server-owned fields.
func ExampleCluster_Deployments() {
	c := memcluster.New(memcluster.Config{Clock: clock.NewFake(start)})
	d, err := c.Deployments("default").Create(context.Background(), webDeployment(), metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	ru := d.Spec.Strategy.RollingUpdate
	fmt.Println("replicas:", *d.Spec.Replicas)
	fmt.Println("strategy:", d.Spec.Strategy.Type, "maxSurge:", ru.MaxSurge, "maxUnavailable:", ru.MaxUnavailable)
	fmt.Println("revisionHistoryLimit:", *d.Spec.RevisionHistoryLimit, "progressDeadlineSeconds:", *d.Spec.ProgressDeadlineSeconds)
	fmt.Println("generation:", d.Generation, "resourceVersion:", d.ResourceVersion, "created:", d.CreationTimestamp.UTC())
	// Output:
	// replicas: 1
	// strategy: RollingUpdate maxSurge: 25% maxUnavailable: 25%
	// revisionHistoryLimit: 10 progressDeadlineSeconds: 600
	// generation: 1 resourceVersion: 2 created: 2026-01-01 00:00:00 +0000 UTC
}

// Writes are guarded by the resourceVersion: an update based on a stale
// read fails with Conflict, as on a real API server.
func ExampleClient_Update() {
	ctx := context.Background()
	c := memcluster.New(memcluster.Config{})
	deployments := c.Deployments("default")
	first, _ := deployments.Create(ctx, webDeployment(), metav1.CreateOptions{})
	stale := first.DeepCopy()

	first.Spec.Replicas = ptr(int32(3))
	if _, err := deployments.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
	stale.Spec.Replicas = ptr(int32(5))
	_, err := deployments.Update(ctx, stale, metav1.UpdateOptions{})
	fmt.Println("conflict:", apierrors.IsConflict(err))
	// Output:
	// conflict: true
}

// A watch started at a list's resourceVersion sees every later change.
func ExampleClient_Watch() {
	ctx := context.Background()
	c := memcluster.New(memcluster.Config{})
	pods := c.Pods("default")
	newPod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
	}
	if _, err := pods.Create(ctx, newPod("before"), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	items, rv, _ := pods.List(ctx, metav1.ListOptions{})
	fmt.Println("listed", len(items), "at", rv)

	if _, err := pods.Create(ctx, newPod("p"), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		panic(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	for range 3 {
		ev := <-w.ResultChan()
		p := ev.Object.(*corev1.Pod)
		fmt.Println(ev.Type, p.Name, p.ResourceVersion, p.DeletionTimestamp != nil)
	}
	// Output:
	// listed 1 at 2
	// ADDED p 3 false
	// MODIFIED p 4 true
	// DELETED p 5 true
}

// The kubelet runs pods on a virtual clock: RunUntil jumps from one
// moment to the next, so a pod that takes an hour to become ready is ready
// in milliseconds.
func ExampleKubelet() {
	fc := clock.NewFake(start)
	c := memcluster.New(memcluster.Config{Clock: fc})
	k := memcluster.NewKubelet(c, memcluster.KubeletConfig{
		Model: memcluster.FixedModel(memcluster.PodBehavior{StartDelay: 10 * time.Second, ReadyDelay: time.Hour}),
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { k.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "slow:1"}}},
	}
	if _, err := c.Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	ready := func() bool {
		p, err := c.Pods("default").Get(ctx, "slow", metav1.GetOptions{})
		return err == nil && isReady(p)
	}
	if err := c.RunUntil(ctx, ready, 2*time.Hour); err != nil {
		panic(err)
	}
	p, _ := c.Pods("default").Get(ctx, "slow", metav1.GetOptions{})
	fmt.Println("node:", p.Spec.NodeName, "phase:", p.Status.Phase)
	fmt.Println("ready after:", fc.Now().Sub(start))
	// Output:
	// node: node-0 phase: Running
	// ready after: 1h0m10s
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
