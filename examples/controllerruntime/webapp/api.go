package webapp

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of WebApp.
var GroupVersion = schema.GroupVersion{Group: "webapp.example.com", Version: "v1"}

// AddToScheme registers WebApp and WebAppList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &WebApp{}, &WebAppList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// WebApp is a web server: replicas of one container image serving on one
// port, behind a Service of the same name.
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebAppSpec   `json:"spec,omitempty"`
	Status WebAppStatus `json:"status,omitempty"`
}

// WebAppSpec is what a WebApp asks for.
type WebAppSpec struct {
	// Image is the container image to run.
	Image string `json:"image"`
	// Replicas is the number of pods; nil means 1.
	Replicas *int32 `json:"replicas,omitempty"`
	// Port is the port the container listens on and the Service exposes;
	// 0 means 8080.
	Port int32 `json:"port,omitempty"`
}

// WebAppStatus is what the operator last saw.
type WebAppStatus struct {
	// Ready is true when the Deployment has rolled out the current spec
	// and is Available.
	Ready bool `json:"ready"`
	// ObservedGeneration is the generation of the spec the operator last
	// acted on.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// AvailableReplicas is the Deployment's count of available pods.
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// LastChecked is when the operator last looked at the Deployment.
	LastChecked *metav1.Time `json:"lastChecked,omitempty"`
}

// WebAppList is a list of WebApps.
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebApp `json:"items"`
}

// DeepCopyInto copies w into out.
func (w *WebApp) DeepCopyInto(out *WebApp) {
	*out = *w
	out.TypeMeta = w.TypeMeta
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if w.Spec.Replicas != nil {
		r := *w.Spec.Replicas
		out.Spec.Replicas = &r
	}
	if w.Status.LastChecked != nil {
		out.Status.LastChecked = w.Status.LastChecked.DeepCopy()
	}
}

// DeepCopy returns a copy of w.
func (w *WebApp) DeepCopy() *WebApp {
	if w == nil {
		return nil
	}
	out := new(WebApp)
	w.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (w *WebApp) DeepCopyObject() runtime.Object { return w.DeepCopy() }

// DeepCopyInto copies l into out.
func (l *WebAppList) DeepCopyInto(out *WebAppList) {
	*out = *l
	out.TypeMeta = l.TypeMeta
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]WebApp, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l.
func (l *WebAppList) DeepCopy() *WebAppList {
	if l == nil {
		return nil
	}
	out := new(WebAppList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *WebAppList) DeepCopyObject() runtime.Object { return l.DeepCopy() }
