package memcluster

import (
	"context"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTestCluster returns a cluster on a fake clock at t0.
func newTestCluster(t *testing.T) (*Cluster, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(t0)
	return New(Config{Clock: fc, Seed: 1}), fc
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
}

func deployment(name string) *appsv1.Deployment {
	l := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: podTemplate(l),
		},
	}
}

func replicaSet(name string, owner *appsv1.Deployment) *appsv1.ReplicaSet {
	l := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: podTemplate(l),
		},
	}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{ownerRef("Deployment", owner.Name, owner.UID)}
	}
	return rs
}

func pod(name string, ownerName string, ownerUID types.UID) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	if ownerUID != "" {
		p.OwnerReferences = []metav1.OwnerReference{ownerRef("ReplicaSet", ownerName, ownerUID)}
	}
	return p
}

func ownerRef(kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

// must returns a function that fails the test on err and returns v:
// must(c.Pods(ns).Create(…))(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func ctxT(t *testing.T) context.Context { return t.Context() }

func newFake() *clock.Fake { return clock.NewFake(t0) }
