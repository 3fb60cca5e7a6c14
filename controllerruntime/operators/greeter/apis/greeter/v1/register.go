package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Greeter.
const GroupName = "greeter.ctrlkit.dev"

// SchemeGroupVersion is the group and version of this package's kinds.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// Kind returns the group and kind of kind in this group.
func Kind(kind string) schema.GroupKind { return SchemeGroupVersion.WithKind(kind).GroupKind() }

// Resource returns the group and resource of resource in this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers this package's kinds.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Greeter{}, &GreeterList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
