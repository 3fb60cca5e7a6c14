package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// t0 is the fixed fixture time.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

func intOrStr(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

// deploy is a RollingUpdate Deployment "web" with the given replicas and
// int-or-percent maxSurge / maxUnavailable ("" leaves it nil).
func deploy(replicas int32, surge, unavailable string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template("v2"),
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{},
			},
			ProgressDeadlineSeconds: ptr[int32](600),
			RevisionHistoryLimit:    ptr[int32](10),
		},
	}
	if surge != "" {
		d.Spec.Strategy.RollingUpdate.MaxSurge = intOrStr(surge)
	}
	if unavailable != "" {
		d.Spec.Strategy.RollingUpdate.MaxUnavailable = intOrStr(unavailable)
	}
	return d
}

func recreateDeploy(replicas int32) *appsv1.Deployment {
	d := deploy(replicas, "", "")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return d
}

// template is a pod template whose image tag is version.
func template(version string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:" + version}}},
	}
}

// rsOpt edits a fixture ReplicaSet.
type rsOpt func(*appsv1.ReplicaSet)

func avail(n int32) rsOpt  { return func(rs *appsv1.ReplicaSet) { rs.Status.AvailableReplicas = n } }
func actual(n int32) rsOpt { return func(rs *appsv1.ReplicaSet) { rs.Status.Replicas = n } }
func ready(n int32) rsOpt  { return func(rs *appsv1.ReplicaSet) { rs.Status.ReadyReplicas = n } }
func rev(r string) rsOpt {
	return func(rs *appsv1.ReplicaSet) { annotate(rs, RevisionAnnotation, r) }
}
func ann(k, v string) rsOpt { return func(rs *appsv1.ReplicaSet) { annotate(rs, k, v) } }
func tpl(version string) rsOpt {
	return func(rs *appsv1.ReplicaSet) { rs.Spec.Template = template(version) }
}

// replicasAnn sets the desired- and max-replicas annotations.
func replicasAnn(desired, max int32) rsOpt {
	return func(rs *appsv1.ReplicaSet) {
		setReplicasAnnotations(rs, desired, max)
	}
}

func annotate(rs *appsv1.ReplicaSet, k, v string) {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[k] = v
}

// rs is a ReplicaSet named name, created minute minutes after t0, with
// spec.replicas spec and (by default) all replicas available. Its
// template is "v1" (old) unless tpl says otherwise.
func rs(name string, minute int, spec int32, opts ...rsOpt) *appsv1.ReplicaSet {
	r := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID(name + "-uid"),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute)),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptr(true),
			}},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(spec), Template: template("v1")},
		Status: appsv1.ReplicaSetStatus{
			Replicas: spec, ReadyReplicas: spec, AvailableReplicas: spec, ObservedGeneration: 1,
		},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// sizes renders Scales as "name:from→to" for compact comparisons.
func sizes(scales []Scale) []string {
	var out []string
	for _, s := range scales {
		out = append(out, s.String())
	}
	return out
}

// names lists ReplicaSet names.
func names(rss []*appsv1.ReplicaSet) []string {
	var out []string
	for _, r := range rss {
		out = append(out, name(r))
	}
	return out
}

// unchanged fails if a deep copy taken before a call differs afterwards.
func unchanged[T any](t *testing.T, what string, before, after T) {
	t.Helper()
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("%s was mutated (-before +after):\n%s", what, diff)
	}
}

func cloneAll(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if rss == nil {
		return nil
	}
	out := make([]*appsv1.ReplicaSet, len(rss))
	for i, r := range rss {
		out[i] = r.DeepCopy()
	}
	return out
}

// errKind classifies an error for table tests: "" (nil), "ignored"
// (wraps ErrIgnoredByUpstream) or "fatal".
func errKind(err error) string {
	switch {
	case err == nil:
		return ""
	case fatal(err):
		return "fatal"
	}
	return "ignored"
}
