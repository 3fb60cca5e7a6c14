package clustertest_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

func webDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

// rolledOut reports whether Deployment key is rolled out at its current
// generation, as kubectl rollout status decides.
func rolledOut(t *testing.T, c *clustertest.Cluster, key client.ObjectKey) func() bool {
	return func() bool {
		var d appsv1.Deployment
		if err := c.Client().Get(t.Context(), key, &d); err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		st := d.Status
		return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == *d.Spec.Replicas &&
			st.AvailableReplicas == *d.Spec.Replicas && st.Replicas == *d.Spec.Replicas
	}
}

func TestRollout(t *testing.T) {
	clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
		d := webDeployment("web", 3, "nginx:1.27")
		if err := c.Client().Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("web rolled out", rolledOut(t, c, client.ObjectKeyFromObject(d)), time.Hour)
		if err := c.Client().Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		if err := c.Client().Update(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("web updated", rolledOut(t, c, client.ObjectKeyFromObject(d)), time.Hour)
		if err := c.Check(); err != nil {
			t.Error(err)
		}
		for _, l := range c.Trace() {
			t.Log(l)
		}
		t.Logf("at +%v", c.Now())
	})
}
