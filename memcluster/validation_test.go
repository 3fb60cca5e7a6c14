package memcluster

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// invalidFields returns "field: type" for each cause of an Invalid error.
func invalidFields(t *testing.T, err error) []string {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) || !apierrors.IsInvalid(err) {
		t.Fatalf("error = %v; want Invalid", err)
	}
	var out []string
	for _, c := range se.ErrStatus.Details.Causes {
		out = append(out, string(c.Field)+": "+string(c.Type))
	}
	return out
}

func TestDeploymentValidation(t *testing.T) {
	strategy := func(mu, ms intstr.IntOrString) func(d *appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: &mu, MaxSurge: &ms}
		}
	}
	tests := []struct {
		name   string
		mutate func(d *appsv1.Deployment)
		want   []string
	}{
		{name: "maxSurge and maxUnavailable both 0", mutate: strategy(intstr.FromInt32(0), intstr.FromString("0%")),
			want: []string{"spec.strategy.rollingUpdate.maxUnavailable: FieldValueInvalid"}},
		{name: "invalid percent", mutate: strategy(intstr.FromString("25"), intstr.FromString("1%")),
			want: []string{"spec.strategy.rollingUpdate.maxUnavailable: FieldValueInvalid"}},
		{name: "negative maxSurge", mutate: strategy(intstr.FromInt32(1), intstr.FromInt32(-1)),
			want: []string{"spec.strategy.rollingUpdate.maxSurge: FieldValueInvalid"}},
		{name: "maxUnavailable over 100%", mutate: strategy(intstr.FromString("101%"), intstr.FromInt32(1)),
			want: []string{"spec.strategy.rollingUpdate.maxUnavailable: FieldValueInvalid"}},
		{name: "rollingUpdate with Recreate", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
		}, want: []string{"spec.strategy.rollingUpdate: FieldValueForbidden"}},
		{name: "negative replicas", mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo(int32(-1)) },
			want: []string{"spec.replicas: FieldValueInvalid"}},
		// A missing selector selects nothing: not the template's labels
		// either (kube-apiserver reports both).
		{name: "missing selector", mutate: func(d *appsv1.Deployment) { d.Spec.Selector = nil },
			want: []string{"spec.selector: FieldValueRequired", "spec.template.metadata.labels: FieldValueInvalid"}},
		{name: "empty selector", mutate: func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} },
			want: []string{"spec.selector: FieldValueInvalid"}},
		{name: "selector does not match template", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "x"} },
			want: []string{"spec.template.metadata.labels: FieldValueInvalid"}},
		{name: "progress deadline not above minReadySeconds", mutate: func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds = 600
		}, want: []string{"spec.progressDeadlineSeconds: FieldValueInvalid"}},
		{name: "restartPolicy Never", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			want: []string{"spec.template.spec.restartPolicy: FieldValueNotSupported"}},
		{name: "missing image", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" },
			want: []string{"spec.template.spec.containers[0].image: FieldValueRequired"}},
		{name: "missing name", mutate: func(d *appsv1.Deployment) { d.Name = "" },
			want: []string{"metadata.name: FieldValueRequired"}},
		{name: "bad name", mutate: func(d *appsv1.Deployment) { d.Name = "Web_1" },
			want: []string{"metadata.name: FieldValueInvalid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCluster(t)
			d := deployment("web")
			tt.mutate(d)
			_, err := c.Deployments("ns").Create(ctxT(t), d, metav1.CreateOptions{})
			if diff := cmp.Diff(tt.want, invalidFields(t, err)); diff != "" {
				t.Errorf("Create() causes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectorImmutable(t *testing.T) {
	c, _ := newTestCluster(t)
	must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("web", nil), metav1.CreateOptions{}))(t)
	rs := must(c.ReplicaSets("ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
	rs.Spec.Selector.MatchLabels["tier"] = "x"
	rs.Spec.Template.Labels["tier"] = "x"
	_, err := c.ReplicaSets("ns").Update(ctxT(t), rs, metav1.UpdateOptions{})
	if diff := cmp.Diff([]string{"spec.selector: FieldValueInvalid"}, invalidFields(t, err)); diff != "" {
		t.Errorf("Update() causes mismatch (-want +got):\n%s", diff)
	}
}

func TestPodSpecImmutable(t *testing.T) {
	c, _ := newTestCluster(t)
	p := must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	p.Spec.Containers[0].Image = "nginx:1.28" // allowed
	p = must(c.Pods("ns").Update(ctxT(t), p, metav1.UpdateOptions{}))(t)
	p.Spec.Hostname = "changed"
	_, err := c.Pods("ns").Update(ctxT(t), p, metav1.UpdateOptions{})
	if diff := cmp.Diff([]string{"spec: FieldValueForbidden"}, invalidFields(t, err)); diff != "" {
		t.Errorf("Update() causes mismatch (-want +got):\n%s", diff)
	}
}

func TestDefaults(t *testing.T) {
	c, _ := newTestCluster(t)
	d := deployment("web")
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "a", Image: "nginx"}, {Name: "b", Image: "nginx:1.2", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}
	got := must(c.Deployments("ns").Create(ctxT(t), d, metav1.CreateOptions{}))(t).Spec
	type defaults struct {
		Strategy            appsv1.DeploymentStrategyType
		MaxUnavailable      string
		PullA, PullB        corev1.PullPolicy
		Protocol            corev1.Protocol
		DNS                 corev1.DNSPolicy
		Scheduler, TermPath string
	}
	want := defaults{Strategy: appsv1.RollingUpdateDeploymentStrategyType, MaxUnavailable: "25%", PullA: corev1.PullAlways,
		PullB: corev1.PullIfNotPresent, Protocol: corev1.ProtocolTCP, DNS: corev1.DNSClusterFirst,
		Scheduler: "default-scheduler", TermPath: "/dev/termination-log"}
	cs := got.Template.Spec.Containers
	if diff := cmp.Diff(want, defaults{Strategy: got.Strategy.Type, MaxUnavailable: got.Strategy.RollingUpdate.MaxUnavailable.String(),
		PullA: cs[0].ImagePullPolicy, PullB: cs[1].ImagePullPolicy, Protocol: cs[1].Ports[0].Protocol,
		DNS: got.Template.Spec.DNSPolicy, Scheduler: got.Template.Spec.SchedulerName, TermPath: cs[0].TerminationMessagePath}); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
	recreate := deployment("re")
	recreate.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	if got := must(c.Deployments("ns").Create(ctxT(t), recreate, metav1.CreateOptions{}))(t); got.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("Recreate deployment got rollingUpdate defaults: %+v", got.Spec.Strategy.RollingUpdate)
	}
	rs := must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("rs", nil), metav1.CreateOptions{}))(t)
	if *rs.Spec.Replicas != 1 {
		t.Errorf("ReplicaSet replicas = %d; want 1", *rs.Spec.Replicas)
	}
	p := must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	if p.Spec.RestartPolicy != corev1.RestartPolicyAlways || *p.Spec.TerminationGracePeriodSeconds != 30 || p.Status.Phase != corev1.PodPending {
		t.Errorf("pod defaults: restartPolicy=%s grace=%d phase=%s", p.Spec.RestartPolicy, *p.Spec.TerminationGracePeriodSeconds, p.Status.Phase)
	}
}
