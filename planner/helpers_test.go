package planner_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/planner"
)

// t0 is the fixed "now" of hand-built states.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// web returns a Deployment "web" with replicas, image and a rolling
// update of surge/unavailable (nil strategy values keep the defaults).
func web(replicas int32, image string, surge, unavailable *intstr.IntOrString) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: surge, MaxUnavailable: unavailable}},
			ProgressDeadlineSeconds: ptr[int32](600),
		},
	}
	return d
}

func pct(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
func num(n int) *intstr.IntOrString    { v := intstr.FromInt32(int32(n)); return &v }

// previous is the complete state of d with image: one ReplicaSet.
func previous(t *testing.T, d *appsv1.Deployment, image string) []*appsv1.ReplicaSet {
	t.Helper()
	tmpl := *d.Spec.Template.DeepCopy()
	tmpl.Spec.Containers[0].Image = image
	rs, err := planner.Previous(d, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return []*appsv1.ReplicaSet{rs}
}

// podQuota is a ResourceQuota named pods of n pods.
func podQuota(n int64) planner.Quota {
	return planner.Quota{Name: "pods", Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(n, resource.DecimalSI)}}
}
