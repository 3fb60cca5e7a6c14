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
	k8stesting "k8s.io/client-go/testing"
)

func TestOperatorNeedsConfig(t *testing.T) {
	if err := (&Operator{}).Run(t.Context()); err == nil || !strings.Contains(err.Error(), "Config") {
		t.Errorf("Run without Config: err = %v", err)
	}
}

// TestControllersOnFakeClientset wires the adapters the way Operator does,
// on client-go's fake clientset, and checks that a Deployment gets a
// ReplicaSet and pods. (The e2e suites do the real thing.)
func TestControllersOnFakeClientset(t *testing.T) {
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
	m := new(Metrics)
	op := &operatorRun{informers: cs, deployments: cs, replicaSets: cs, namespace: "ns", workers: 2, grace: time.Second, metrics: m}
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
		if len(pods.Items) == 2 && len(rss.Items) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %d ReplicaSets, %d pods; want 1 and 2", len(rss.Items), len(pods.Items))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
}
