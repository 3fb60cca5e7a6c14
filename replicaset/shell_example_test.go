package replicaset_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// The ReplicaSet controller on an in-memory cluster in virtual time, with
// a simulated kubelet: a ReplicaSet scales up, then down.
func ExampleNewController() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1})
	rsInf := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	podInf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	rc, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: rsInf, Pods: podInf, Client: memcluster.ControllerClient{Cluster: c}, Clock: fc, Workers: 2,
	})
	if err != nil {
		panic(err)
	}
	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{}) // before anything runs: see NewKubelet
	for _, run := range []func(context.Context) error{rsInf.Run, podInf.Run, rc.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				panic(err)
			}
		})
	}
	wg.Go(func() { kubelet.Run(ctx) })

	rs := exampleRS(3)
	rs.UID, rs.Generation = "", 0
	if _, err := c.ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	settled := func(n int32) func() bool {
		return func() bool {
			cur, err := c.ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false
			}
			pods, _, err := c.Pods("default").List(ctx, metav1.ListOptions{})
			return err == nil && int32(len(pods)) == n && cur.Status.ObservedGeneration == cur.Generation &&
				cur.Status.Replicas == n && cur.Status.ReadyReplicas == n
		}
	}
	for _, n := range []int32{3, 1} {
		if n != 3 {
			patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
			if _, err := c.ReplicaSets("default").Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				panic(err)
			}
		}
		if err := c.RunUntil(ctx, settled(n), time.Hour); err != nil {
			panic(err)
		}
		cur, _ := c.ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		fmt.Printf("spec.replicas %d: %d pods, %d ready, %d available\n", n, cur.Status.Replicas, cur.Status.ReadyReplicas, cur.Status.AvailableReplicas)
	}
	// Output:
	// spec.replicas 3: 3 pods, 3 ready, 3 available
	// spec.replicas 1: 1 pods, 1 ready, 1 available
}

// Decide with ManageReplicas, then execute the plan with WritePods; the
// caller records the expectations and writes the status.
func ExampleWritePods() {
	ctx := context.Background()
	c := memcluster.New(memcluster.Config{Clock: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	rs := exampleRS(2)
	rs.UID, rs.Generation = "", 0
	rs, err := c.ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	plan, err := replicaset.ManageReplicas(replicaset.Input{ReplicaSet: rs, ExpectationsSatisfied: true}, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	fmt.Print(plan.Actions[0], "\n")
	applied, err := replicaset.WritePods(ctx, memcluster.ControllerClient{Cluster: c}, nil, rs, plan)
	pods, _, _ := c.Pods("default").List(ctx, metav1.ListOptions{})
	fmt.Printf("created %d, err %v, %d pods owned by %s\n", applied.Created, err, len(pods), metav1.GetControllerOf(pods[0]).Name)
	// Output:
	// create 2 pods
	// created 2, err <nil>, 2 pods owned by web
}
