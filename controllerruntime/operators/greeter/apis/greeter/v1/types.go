// Package v1 is version v1 of the API group greeter.ctrlkit.dev: the
// Greeter kind.
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Greeter runs Replicas pods of Image that greet with Message.
type Greeter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GreeterSpec   `json:"spec"`
	Status GreeterStatus `json:"status,omitempty"`
}

// GreeterSpec is what a Greeter asks for.
type GreeterSpec struct {
	// Message is the greeting, given to the pods as GREETING.
	Message string `json:"message"`
	// Image is the container image of the pods.
	Image string `json:"image"`
	// Replicas is the number of pods; nil means 1.
	Replicas *int32 `json:"replicas,omitempty"`
}

// GreeterStatus is what the controller last saw.
type GreeterStatus struct {
	// AvailableReplicas is the Deployment's count of available pods.
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// ObservedGeneration is the generation of the spec the controller
	// last acted on.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready says whether every pod of the current spec is
	// available, or why not.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GreeterList is a list of Greeters.
type GreeterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []Greeter `json:"items"`
}
