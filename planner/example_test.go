package planner_test

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/planner"
)

// deploymentOf returns a Deployment "web" of 10 replicas running image,
// with a 25%/25% rolling update.
func deploymentOf(image string) *appsv1.Deployment {
	q := intstr.FromString("25%")
	r := int32(10)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &r,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &q, MaxUnavailable: &q}},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1},
	}
}

func ExampleSimulate() {
	d := deploymentOf("web:2")
	prev, err := planner.Previous(d, deploymentOf("web:1").Spec.Template)
	if err != nil {
		fmt.Println(err)
		return
	}
	tl, err := planner.Simulate(d, []*appsv1.ReplicaSet{prev}, planner.PodModel{ReadyAfter: 10 * time.Second}, planner.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Old pods take their default 30s grace period to stop: at +10s, 3 old
	// and 10 new pods exist while 7 old ones terminate (2 deleted at +0s,
	// 5 at +10s), 20 in all.
	fmt.Printf("complete=%t after %s, %d steps\n", tl.Complete, tl.Duration, len(tl.Steps))
	fmt.Printf("peak %d pods, at least %d available\n", tl.PeakPods, tl.MinAvailable)
	fmt.Printf("violations: %d\n", len(planner.Check(tl.Trace(), d)))
	// Output:
	// complete=true after 20s, 15 steps
	// peak 20 pods, at least 8 available
	// violations: 0
}

func ExampleExplain() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	d := deploymentOf("web:2")
	rs := func(image, name string, spec, available int32) *appsv1.ReplicaSet {
		tmpl := deploymentOf(image).Spec.Template
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
				CreationTimestamp: metav1.NewTime(now.Add(-time.Duration(spec) * time.Minute)),
				OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
			Spec:   appsv1.ReplicaSetSpec{Replicas: &spec, Template: tmpl},
			Status: appsv1.ReplicaSetStatus{Replicas: spec, ReadyReplicas: available, AvailableReplicas: available},
		}
	}
	old, cur := rs("web:1", "web-old", 8, 8), rs("web:2", "web-new", 5, 0)
	var pods []*corev1.Pod
	for i := range 5 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("web-new-", i),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cur, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}
		if i < 3 {
			p.Spec.NodeName = "node-1"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: 4,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
		}
		pods = append(pods, p)
	}
	for _, b := range planner.Explain(d, []*appsv1.ReplicaSet{old, cur}, pods, now) {
		fmt.Printf("%s: %s\n", b.Code, b.Message)
	}
	// Output:
	// SurgeLimit: new replica set web-new cannot scale up: 13 pods ≥ 10 + 3 surge
	// MinAvailableLimit: old replica sets cannot scale down: 8 available ≤ 8 minimum because 5 new pods are unavailable (3 crash-looping, 2 unscheduled)
}

func ExampleCheck() {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	trace := planner.Trace{
		{Time: at, Replicas: 10, ReplicaSets: []planner.ReplicaSetState{
			{Name: "web-old", Revision: 1, Spec: 10, Available: 10}}},
		{Time: at.Add(time.Second), Replicas: 10, ReplicaSets: []planner.ReplicaSetState{
			{Name: "web-old", Revision: 1, Spec: 6, Available: 10},
			{Name: "web-new", Revision: 2, Spec: 8, New: true}}},
	}
	for _, v := range planner.Check(trace, deploymentOf("web:2")) {
		fmt.Println(v)
	}
	// Output:
	// step 1: SurgeExceeded: 14 pods specified > 10 replicas + 3 maxSurge
	// step 1: UnavailableExceeded: scale-down leaves at most 6 available < 8 minimum (10 replicas − 2 maxUnavailable)
}
