package site

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of Site.
var GroupVersion = schema.GroupVersion{Group: "site.example.com", Version: "v1"}

// AddToScheme registers Site and SiteList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Site{}, &SiteList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Site is a web site: replicas of one container image, run by a
// Deployment of the same name.
type Site struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SiteSpec   `json:"spec,omitempty"`
	Status SiteStatus `json:"status,omitempty"`
}

// SiteSpec is what a Site asks for.
type SiteSpec struct {
	// Image is the container image to run.
	Image string `json:"image"`
	// Replicas is the number of pods.
	Replicas int32 `json:"replicas"`
}

// SiteStatus is what the operator last saw.
type SiteStatus struct {
	// ObservedGeneration is the generation of the spec the operator has
	// pushed to the Deployment.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Ready is true when every replica runs the spec's image and is
	// available.
	Ready bool `json:"ready"`
}

// SiteList is a list of Sites.
type SiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Site `json:"items"`
}

// DeepCopyObject copies the Site.
func (s *Site) DeepCopyObject() runtime.Object {
	out := *s
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// DeepCopyObject copies the list.
func (l *SiteList) DeepCopyObject() runtime.Object {
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Site, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Site)
	}
	return &out
}
