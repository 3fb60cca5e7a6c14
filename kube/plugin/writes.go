package plugin

import (
	"time"
)

// ReplicasWrite is one change of a Deployment's spec.replicas, seen by
// watching it: the new value and the managers that own the field in the
// version that has it (managedFields): the writer of that change.
type ReplicasWrite struct {
	At       time.Time `json:"at"`
	Replicas int32     `json:"replicas"`
	// Owners are "manager" or "manager (/subresource)" for a write
	// through a subresource (/scale).
	Owners []string `json:"owners"`
}
