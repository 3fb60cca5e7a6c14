//go:build e2e

package compare

import (
	"time"

	"github.com/ctrlkit/ctrlkit/rollout"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// scenario is a scripted run: setup brings the namespace to a starting
// state (not measured), act makes the change that is measured, until the
// Deployment "web" has rolled out completely.
type scenario struct {
	name  string
	setup func(s *run)
	act   func(s *run)
}

func webDeployment(n int32, img string, surge, unavail string) *appsv1.Deployment {
	lbl := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img}}},
			},
		},
	}
	if surge != "" {
		s, u := intstr.Parse(surge), intstr.Parse(unavail)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
	}
	return d
}

func setImage(img string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = img }
}

func setReplicas(n int32) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Replicas = &n }
}

var scenarios = []scenario{
	{
		name: "create 10",
		act:  func(s *run) { s.create(webDeployment(10, "nginx:1", "", "")) },
	},
	{
		name:  "image change 10, surge 3 / unavailable 2",
		setup: func(s *run) { s.create(webDeployment(10, "nginx:1", "3", "2")); s.waitComplete() },
		act:   func(s *run) { s.update(setImage("nginx:2")) },
	},
	{
		name:  "image change 6, surge 0 / unavailable 1",
		setup: func(s *run) { s.create(webDeployment(6, "nginx:1", "0", "1")); s.waitComplete() },
		act:   func(s *run) { s.update(setImage("nginx:2")) },
	},
	{
		name:  "image change 6, surge 1 / unavailable 0",
		setup: func(s *run) { s.create(webDeployment(6, "nginx:1", "1", "0")); s.waitComplete() },
		act:   func(s *run) { s.update(setImage("nginx:2")) },
	},
	{
		name: "recreate 6",
		setup: func(s *run) {
			d := webDeployment(6, "nginx:1", "", "")
			d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
			s.create(d)
			s.waitComplete()
		},
		act: func(s *run) { s.update(setImage("nginx:2")) },
	},
	{
		name:  "scale 10 → 20",
		setup: func(s *run) { s.create(webDeployment(10, "nginx:1", "", "")); s.waitComplete() },
		act:   func(s *run) { s.update(setReplicas(20)) },
	},
	{
		name: "rollout undo 6",
		setup: func(s *run) {
			s.create(webDeployment(6, "nginx:1", "", ""))
			s.waitComplete()
			s.update(setImage("nginx:2"))
			s.waitComplete()
		},
		act: func(s *run) {
			d := s.get()
			res, err := rollout.Undo(d, s.owned(d), 0)
			if err != nil {
				s.t.Fatal(err)
			}
			s.patch(res.Patch, res.PatchType)
		},
	},
	{
		name:  "rollout restart 6",
		setup: func(s *run) { s.create(webDeployment(6, "nginx:1", "", "")); s.waitComplete() },
		act: func(s *run) {
			// A fixed time, so that both runs create the same template hash.
			data, pt, err := rollout.RestartPatch(s.get(), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			if err != nil {
				s.t.Fatal(err)
			}
			s.patch(data, pt)
		},
	},
}
