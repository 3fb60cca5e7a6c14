package envtestshape

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of Site.
var GroupVersion = schema.GroupVersion{Group: "demo.ctrlkit.dev", Version: "v1"}

// AddToScheme registers Site and SiteList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Site{}, &SiteList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Site is a web site: replicas of one container image.
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
	// Replicas is the number of pods; nil means 1.
	Replicas *int32 `json:"replicas,omitempty"`
}

// SiteStatus is what the operator last saw.
type SiteStatus struct {
	// Conditions: Available says whether every pod of the current spec is
	// ready.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ReadyReplicas is the Deployment's count of ready pods.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ObservedGeneration is the generation of the spec the operator last
	// acted on.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// SiteList is a list of Sites.
type SiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Site `json:"items"`
}

// DeepCopyInto copies s into out.
func (s *Site) DeepCopyInto(out *Site) {
	*out = *s
	out.TypeMeta = s.TypeMeta
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if s.Spec.Replicas != nil {
		r := *s.Spec.Replicas
		out.Spec.Replicas = &r
	}
	if s.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(s.Status.Conditions))
		for i := range s.Status.Conditions {
			s.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
}

// DeepCopy returns a copy of s.
func (s *Site) DeepCopy() *Site {
	if s == nil {
		return nil
	}
	out := new(Site)
	s.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (s *Site) DeepCopyObject() runtime.Object { return s.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *SiteList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &SiteList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Site, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
