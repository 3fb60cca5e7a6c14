//go:build e2e

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestCascadingDelete(t *testing.T) {
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond})
	e.create(deployment("web", 3, "nginx:1"))
	e.waitComplete("web", 30*time.Second)
	fg := metav1.DeletePropagationBackground
	if err := e.cs.AppsV1().Deployments(e.ns).Delete(e.ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(e.replicaSets())+len(e.pods()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 60s: %d ReplicaSets and %d pods left", len(e.replicaSets()), len(e.pods()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestOrphanAdoptionAndRelease(t *testing.T) {
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond})
	// An orphan ReplicaSet that the Deployment's selector matches, with
	// the Deployment's template: the Deployment adopts it as its own.
	d := deployment("web", 2, "nginx:1")
	orphan := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(1)), Selector: d.Spec.Selector.DeepCopy(),
			Template: *d.Spec.Template.DeepCopy()},
	}
	if _, err := e.cs.AppsV1().ReplicaSets(e.ns).Create(e.ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := e.create(d)
	e.waitComplete("web", 30*time.Second)
	e.waitFor("orphan adopted", 10*time.Second, func(s cluster.Snapshot) bool {
		rs := s.ReplicaSets["orphan"]
		return rs != nil && metav1.IsControlledBy(rs, created)
	})
	// Relabel it out of the selector: the Deployment releases it.
	patch := []byte(`{"metadata":{"labels":{"app":"other"}}}`)
	if _, err := e.cs.AppsV1().ReplicaSets(e.ns).Patch(e.ctx, "orphan", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("orphan released", 10*time.Second, func(s cluster.Snapshot) bool {
		rs := s.ReplicaSets["orphan"]
		return rs != nil && metav1.GetControllerOf(rs) == nil
	})
	// The Deployment then creates a ReplicaSet of its own and rolls it out.
	e.waitFor("a new ReplicaSet rolled out", 30*time.Second, func(s cluster.Snapshot) bool {
		for name, rs := range s.ReplicaSets {
			if name != "orphan" && metav1.IsControlledBy(rs, created) && rs.Status.AvailableReplicas == 2 {
				return cluster.Complete(s.Deployments["web"])
			}
		}
		return false
	})

	// Pods: an orphan pod matching a ReplicaSet is adopted (and, being
	// surplus, removed); a pod relabeled away is released and replaced.
	pods := e.pods()
	var owned *corev1.Pod
	for i := range pods {
		if ref := metav1.GetControllerOf(&pods[i]); ref != nil && ref.Name != "orphan" {
			owned = &pods[i]
			break
		}
	}
	if owned == nil {
		t.Fatal("no pod of the Deployment's ReplicaSet")
	}
	if _, err := e.cs.CoreV1().Pods(e.ns).Patch(e.ctx, owned.Name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app":"elsewhere","pod-template-hash":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := e.cs.CoreV1().Pods(e.ns).Get(e.ctx, owned.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if metav1.GetControllerOf(p) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("relabeled pod was not released")
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.waitComplete("web", 30*time.Second)
}

func TestPodsDeletedUnderReplicaSet(t *testing.T) {
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond})
	e.create(deployment("web", 4, "nginx:1"))
	e.waitComplete("web", 30*time.Second)
	for _, p := range e.pods()[:3] {
		if err := e.cs.CoreV1().Pods(e.ns).Delete(e.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("deployment degraded", 10*time.Second, func(s cluster.Snapshot) bool {
		d := s.Deployments["web"]
		return d != nil && d.Status.AvailableReplicas < 4
	})
	e.waitComplete("web", 30*time.Second)
	if n := len(e.pods()); n != 4 {
		t.Errorf("%d pods, want 4", n)
	}
}

// TestConcurrentWriters runs two copies of our controllers on the same
// namespace while the test keeps rescaling and changing the template: the
// writers conflict with each other and must still converge, with exactly
// the right pods.
func TestConcurrentWriters(t *testing.T) {
	e := newEnv(t, envOptions{readyDelay: 100 * time.Millisecond})
	ctx, stop := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	e.startOperator(ctx, &wg, false, logr.Logger{}) // a second, independent operator
	defer func() { stop(); wg.Wait() }()
	e.create(deployment("web", 4, "nginx:1"))
	for i, n := range []int32{6, 3, 8, 5} {
		img := []string{"nginx:2", "nginx:3", "nginx:2", "nginx:4"}[i]
		e.update("web", func(d *appsv1.Deployment) {
			d.Spec.Replicas = &n
			d.Spec.Template.Spec.Containers[0].Image = img
		})
		time.Sleep(300 * time.Millisecond)
	}
	e.waitComplete("web", 90*time.Second)
	e.waitFor("exactly 5 pods", 30*time.Second, func(s cluster.Snapshot) bool {
		var total int32
		for _, rs := range s.ReplicaSets {
			total += rs.Status.Replicas
		}
		return total == 5
	})
	counts := e.metrics.Requests.Counts()
	t.Logf("writes of both operators: %d (%v)", e.metrics.Requests.Writes(), counts)
}
