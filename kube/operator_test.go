package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/flowcontrol"
)

func TestOperatorNeedsConfig(t *testing.T) {
	if err := (&Operator{}).Run(t.Context()); err == nil || !strings.Contains(err.Error(), "Config") {
		t.Errorf("Run without Config: err = %v", err)
	}
}

func TestOperatorNeedsMetricsFromNewMetrics(t *testing.T) {
	op := &Operator{Config: &rest.Config{Host: "http://127.0.0.1:1"}, Metrics: new(Metrics)}
	if err := op.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "NewMetrics") {
		t.Errorf("Run with a zero Metrics: err = %v", err)
	}
}

func TestOperatorLowPriorityEventsNeedsQPS(t *testing.T) {
	op := &Operator{Config: &rest.Config{Host: "http://127.0.0.1:1", RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}, LowPriorityEvents: true}
	if err := op.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "RateLimiter") {
		t.Errorf("Run with LowPriorityEvents and a RateLimiter: err = %v", err)
	}
}

// TestControllersOnFakeClientset wires the adapters the way Operator does,
// on client-go's fake clientset, and checks that a Deployment gets a
// ReplicaSet and pods, and that each controller's events go through the
// client it is given for them (with LowPriorityEvents they have their
// own). (The e2e suites do the real thing.)
func TestControllersOnFakeClientset(t *testing.T) {
	t.Run("events on the controllers' clients", func(t *testing.T) { testControllersOnFakeClientset(t, false) })
	t.Run("events on clients of their own", func(t *testing.T) { testControllersOnFakeClientset(t, true) })
}

func testControllersOnFakeClientset(t *testing.T, ownEventClients bool) {
	lbl := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
	}
	cs := fake.NewClientset(d)
	// The fake assigns neither generated names nor UIDs; the API server does.
	var mu sync.Mutex
	n := 0
	cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object)
		if !ok {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		if obj.GetName() == "" {
			obj.SetName(fmt.Sprintf("%s%d", obj.GetGenerateName(), n))
		}
		if obj.GetUID() == "" {
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", n)))
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	op := &operatorRun{informers: cs, deployments: cs, replicaSets: cs, namespace: "ns", dWorkers: 2, rsWorkers: 2, grace: time.Second, metrics: m}
	dEvents, rsEvents := cs, cs
	if ownEventClients {
		dEvents, rsEvents = fake.NewClientset(), fake.NewClientset()
		op.deploymentEvents, op.replicaSetEvents = dEvents, rsEvents
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := op.run(ctx); err != nil {
			t.Errorf("run: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rss, err := cs.AppsV1().ReplicaSets("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dEvs, err := dEvents.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rsEvs, err := rsEvents.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 2 && len(rss.Items) == 1 &&
			hasEvent(dEvs.Items, DeploymentComponent, "ScalingReplicaSet") && hasEvent(rsEvs.Items, ReplicaSetComponent, "SuccessfulCreate") {
			if ownEventClients {
				if evs, err := cs.CoreV1().Events("ns").List(ctx, metav1.ListOptions{}); err != nil || len(evs.Items) > 0 {
					t.Errorf("events on the controllers' client: %v, %v", evs, err)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %d ReplicaSets, %d pods, %d and %d events; want 1 and 2 and the controllers' events",
				len(rss.Items), len(pods.Items), len(dEvs.Items), len(rsEvs.Items))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
}

func hasEvent(evs []corev1.Event, component, reason string) bool {
	for _, e := range evs {
		if e.Source.Component == component && e.Reason == reason {
			return true
		}
	}
	return false
}
