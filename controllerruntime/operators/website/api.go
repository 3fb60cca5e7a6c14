package website

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of Website.
var GroupVersion = schema.GroupVersion{Group: "web.ctrlkit.dev", Version: "v1"}

// AddToScheme registers Website and WebsiteList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Website{}, &WebsiteList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// The tiers of a Website.
const (
	TierFree = "free"
	TierPro  = "pro"
)

// Website is a web site: a Deployment of Replicas pods of Image.
type Website struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebsiteSpec   `json:"spec,omitempty"`
	Status WebsiteStatus `json:"status,omitempty"`
}

// WebsiteSpec is what a Website asks for.
type WebsiteSpec struct {
	// Image is the web server's container image (required).
	Image string `json:"image,omitempty"`
	// Replicas is the number of pods; the defaulting webhook sets 1. A
	// free Website has at most 3.
	Replicas *int32 `json:"replicas,omitempty"`
	// Tier is "free" or "pro"; the defaulting webhook sets "free". It
	// cannot change.
	Tier string `json:"tier,omitempty"`
}

// WebsiteStatus is what the operator last saw.
type WebsiteStatus struct {
	// ReadyReplicas is the Deployment's count of ready pods.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
}

// WebsiteList is a list of Websites.
type WebsiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Website `json:"items"`
}

// DeepCopyInto copies w into out.
func (w *Website) DeepCopyInto(out *Website) {
	*out = *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if w.Spec.Replicas != nil {
		r := *w.Spec.Replicas
		out.Spec.Replicas = &r
	}
}

// DeepCopy returns a copy of w.
func (w *Website) DeepCopy() *Website {
	if w == nil {
		return nil
	}
	out := new(Website)
	w.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (w *Website) DeepCopyObject() runtime.Object { return w.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *WebsiteList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &WebsiteList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Website, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
