// Package webapp is an example custom workload: a WebApp resource that
// owns ReplicaSets and gets Deployment-style rollouts from ctrlkit's
// Deployment controller (deployment.NewWorkloadReconciler) without
// pretending to be an appsv1.Deployment.
//
// A WebApp asks for replicas of one container image. Its spec maps to a
// Deployment's (selector and pod template derived from its name and
// image, the strategy and rollout knobs as they are), and its status holds
// a Deployment's status field for field, so that the controller's writes
// converge: a status mapping that dropped fields would be written again on
// every sync.
package webapp

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/deployment"
)

// Kind is the WebApp's group, version and kind.
var Kind = schema.GroupVersionKind{Group: "example.ctrlkit.io", Version: "v1", Kind: "WebApp"}

// WebApp is replicas of one container image behind a name.
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Spec   `json:"spec"`
	Status Status `json:"status,omitempty"`
}

// Spec is what a WebApp asks for.
type Spec struct {
	// Replicas defaults to 1.
	Replicas *int32 `json:"replicas,omitempty"`
	// Image is the container image.
	Image string `json:"image"`
	// Strategy, MinReadySeconds, RevisionHistoryLimit, Paused and
	// ProgressDeadlineSeconds are a Deployment's.
	Strategy                appsv1.DeploymentStrategy `json:"strategy,omitempty"`
	MinReadySeconds         int32                     `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit    *int32                    `json:"revisionHistoryLimit,omitempty"`
	Paused                  bool                      `json:"paused,omitempty"`
	ProgressDeadlineSeconds *int32                    `json:"progressDeadlineSeconds,omitempty"`
}

// Status is a Deployment's status: every field the controller writes is
// kept.
type Status struct {
	appsv1.DeploymentStatus `json:",inline"`
}

// labels are the labels of a WebApp's pods, and its selector.
func (w *WebApp) labels() map[string]string { return map[string]string{"webapp": w.Name} }

// DeploymentSpec is the Deployment the WebApp amounts to, with the
// defaults the API server gives a Deployment. Its pod template is complete
// as the API server stores it in a ReplicaSet (the defaults of
// SetDefaults_PodSpec and SetDefaults_Container): the controller finds a
// WebApp's ReplicaSets by comparing their stored templates with this one.
func (w *WebApp) DeploymentSpec() appsv1.DeploymentSpec {
	replicas, history, deadline := int32(1), int32(10), int32(600)
	quarter := intstr.FromString("25%")
	s := appsv1.DeploymentSpec{
		Replicas: &replicas,
		Selector: &metav1.LabelSelector{MatchLabels: w.labels()},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: w.labels()},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "web", Image: w.Spec.Image,
					ImagePullPolicy:          pullPolicy(w.Spec.Image),
					TerminationMessagePath:   corev1.TerminationMessagePathDefault,
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				}},
				RestartPolicy:                 corev1.RestartPolicyAlways,
				DNSPolicy:                     corev1.DNSClusterFirst,
				SecurityContext:               &corev1.PodSecurityContext{},
				TerminationGracePeriodSeconds: ptr(int64(corev1.DefaultTerminationGracePeriodSeconds)),
				SchedulerName:                 corev1.DefaultSchedulerName,
			},
		},
		Strategy:                *w.Spec.Strategy.DeepCopy(),
		MinReadySeconds:         w.Spec.MinReadySeconds,
		RevisionHistoryLimit:    &history,
		Paused:                  w.Spec.Paused,
		ProgressDeadlineSeconds: &deadline,
	}
	if w.Spec.Replicas != nil {
		s.Replicas = ptr(*w.Spec.Replicas)
	}
	if w.Spec.RevisionHistoryLimit != nil {
		s.RevisionHistoryLimit = ptr(*w.Spec.RevisionHistoryLimit)
	}
	if w.Spec.ProgressDeadlineSeconds != nil {
		s.ProgressDeadlineSeconds = ptr(*w.Spec.ProgressDeadlineSeconds)
	}
	if s.Strategy.Type == "" {
		s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.Strategy.RollingUpdate.MaxSurge == nil {
			s.Strategy.RollingUpdate.MaxSurge = &quarter
		}
		if s.Strategy.RollingUpdate.MaxUnavailable == nil {
			s.Strategy.RollingUpdate.MaxUnavailable = &quarter
		}
	}
	return s
}

// pullPolicy is the API server's default: Always for the latest tag (or
// none), IfNotPresent otherwise.
func pullPolicy(image string) corev1.PullPolicy {
	ref := image
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		ref = ref[i+1:]
	}
	if i := strings.Index(ref, "@"); i >= 0 {
		return corev1.PullIfNotPresent
	}
	if i := strings.LastIndex(ref, ":"); i < 0 || ref[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func ptr[T any](v T) *T { return &v }

// SetDeploymentSpec takes the image of a rolled-back template.
func (w *WebApp) SetDeploymentSpec(s appsv1.DeploymentSpec) error {
	if len(s.Template.Spec.Containers) != 1 {
		return fmt.Errorf("webapp %s: a template with %d containers is not a WebApp's", w.Name, len(s.Template.Spec.Containers))
	}
	w.Spec.Image = s.Template.Spec.Containers[0].Image
	return nil
}

// DeploymentStatus returns the status.
func (w *WebApp) DeploymentStatus() appsv1.DeploymentStatus { return w.Status.DeploymentStatus }

// SetDeploymentStatus stores s.
func (w *WebApp) SetDeploymentStatus(s appsv1.DeploymentStatus) { w.Status.DeploymentStatus = s }

// DeepCopy returns a deep copy of w.
func (w *WebApp) DeepCopy() *WebApp {
	if w == nil {
		return nil
	}
	out := &WebApp{TypeMeta: w.TypeMeta, Spec: w.Spec}
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	w.Spec.Strategy.DeepCopyInto(&out.Spec.Strategy)
	out.Spec.Replicas = copyPtr(w.Spec.Replicas)
	out.Spec.RevisionHistoryLimit = copyPtr(w.Spec.RevisionHistoryLimit)
	out.Spec.ProgressDeadlineSeconds = copyPtr(w.Spec.ProgressDeadlineSeconds)
	w.Status.DeploymentStatus.DeepCopyInto(&out.Status.DeploymentStatus)
	return out
}

// DeepCopyObject implements runtime.Object.
func (w *WebApp) DeepCopyObject() runtime.Object { return w.DeepCopy() }

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

var _ deployment.Workload = (*WebApp)(nil)

// List is a list of WebApps, as the API serves them.
type List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebApp `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *List) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &List{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]WebApp, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return out
}

// AddToScheme registers WebApp and List under [Kind]'s group and version.
func AddToScheme(s *runtime.Scheme) error {
	gv := Kind.GroupVersion()
	s.AddKnownTypeWithName(gv.WithKind(Kind.Kind), &WebApp{})
	s.AddKnownTypeWithName(gv.WithKind(Kind.Kind+"List"), &List{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}
