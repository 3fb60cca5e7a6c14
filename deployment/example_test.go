package deployment_test

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/deployment"
)

// A new Deployment: one sync creates its first ReplicaSet and writes the
// status; nothing is applied here.
func ExampleSync() {
	replicas, surge, unavailable := int32(3), intstr.FromString("25%"), intstr.FromString("25%")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "1", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:v1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
		},
	}
	plan, err := deployment.Sync(deployment.State{Deployment: d}, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(plan)
	// Output:
	// create rs/web-6bff6466bb replicas=3 revision=1
	// event Normal ScalingReplicaSet "Scaled up replica set web-6bff6466bb from 0 to 3"
	// status gen=1 replicas=0 updated=0 ready=0 available=0 unavailable=3 terminating=0 revision=1 Available=False(MinimumReplicasUnavailable)
}

// Plans are data: a caller can inspect the actions before applying them.
func ExamplePlan_actions() {
	plan := deployment.Plan{Actions: []deployment.Action{
		deployment.ScaleReplicaSet{ReplicaSet: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f6b"}}, From: 3, To: 5},
		deployment.Event{Type: corev1.EventTypeNormal, Reason: "ScalingReplicaSet", Message: "Scaled up replica set web-7d9f6b from 3 to 5"},
	}}
	for _, a := range plan.Actions {
		if s, ok := a.(deployment.ScaleReplicaSet); ok {
			fmt.Println(s, "grows by", s.To-s.From)
		}
	}
	// Output:
	// scale rs/web-7d9f6b 3→5 grows by 2
}
