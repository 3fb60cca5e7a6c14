package features

import (
	"fmt"
	"slices"
	"strings"
)

// Name names a feature gate, as kube-controller-manager's --feature-gates
// flag spells it.
type Name string

// The gates the Deployment and ReplicaSet controllers of
// kube-controller-manager v1.37 consult. Each is a field of [Gates].
const (
	// DeploymentReplicaSetTerminatingReplicas (beta since 1.35, on by
	// default in v1.37; alpha and off in 1.33 and 1.34): both
	// controllers write status.terminatingReplicas, the number of pods
	// that are shutting down. Off, they write it as nil.
	DeploymentReplicaSetTerminatingReplicas Name = "DeploymentReplicaSetTerminatingReplicas"
	// PodDeletionCost (beta since 1.22, on by default): the ReplicaSet
	// controller deletes pods with a lower
	// controller.kubernetes.io/pod-deletion-cost annotation first. Off, it
	// ignores the annotation.
	PodDeletionCost Name = "PodDeletionCost"
	// StaleControllerConsistencyReplicaSet (beta since 1.36, on by
	// default; KEP-5647): the ReplicaSet controller does not sync a
	// ReplicaSet until its caches have seen its own last writes. Off, it
	// syncs on whatever its caches hold. kube-controller-manager refuses
	// it on while client-go's AtomicFIFO gate is off.
	StaleControllerConsistencyReplicaSet Name = "StaleControllerConsistencyReplicaSet"
)

// Setting is the setting of one gate. The zero value, [Default], leaves
// the gate at its v1.37 default.
type Setting int8

// The settings of a gate.
const (
	// Default is the gate's default in kube-controller-manager v1.37.
	Default Setting = iota
	// On enables the gate.
	On
	// Off disables the gate.
	Off
)

func (s Setting) String() string {
	switch s {
	case Default:
		return "default"
	case On:
		return "true"
	case Off:
		return "false"
	}
	return fmt.Sprintf("Setting(%d)", int8(s))
}

// Gates are the feature gates of both controllers, one field per gate.
// The zero value is kube-controller-manager v1.37's defaults; set a field
// to [On] or [Off] to switch a gate, as --feature-gates does. A gate that
// a controller does not consult (PodDeletionCost in the Deployment
// controller) is ignored by it.
type Gates struct {
	// DeploymentReplicaSetTerminatingReplicas: see the constant of that
	// name. Default: on.
	DeploymentReplicaSetTerminatingReplicas Setting
	// PodDeletionCost: see the constant of that name. Default: on.
	PodDeletionCost Setting
	// StaleControllerConsistencyReplicaSet: see the constant of that
	// name. Default: on.
	StaleControllerConsistencyReplicaSet Setting
}

// Spec describes one gate as kube-controller-manager v1.37 registers it.
type Spec struct {
	Name Name
	// Default is the gate's value when nothing sets it.
	Default bool
	// PreRelease is its stage: "ALPHA", "BETA" or "" (GA), spelled as
	// k8s.io/component-base/featuregate spells them.
	PreRelease string
	// Since is the Kubernetes minor version in which the gate reached
	// that stage and default ("1.35").
	Since string
	// LockToDefault means the gate cannot be set to anything but its
	// default.
	LockToDefault bool
	// DependsOn are the gates that must be enabled while this one is (a
	// kube-controller-manager dependency; they may be client-go's).
	DependsOn []Name
}

var specs = []Spec{
	{Name: DeploymentReplicaSetTerminatingReplicas, Default: true, PreRelease: "BETA", Since: "1.35"},
	{Name: PodDeletionCost, Default: true, PreRelease: "BETA", Since: "1.22"},
	{Name: StaleControllerConsistencyReplicaSet, Default: true, PreRelease: "BETA", Since: "1.36", DependsOn: []Name{"AtomicFIFO"}},
}

// Known returns the specs of every gate of [Gates], sorted by name. The
// caller may modify the result.
func Known() []Spec {
	out := make([]Spec, len(specs))
	for i, s := range specs {
		s.DependsOn = slices.Clone(s.DependsOn)
		out[i] = s
	}
	return out
}

// field returns the setting of name in g, or false for an unknown name.
func (g *Gates) field(name Name) (*Setting, bool) {
	switch name {
	case DeploymentReplicaSetTerminatingReplicas:
		return &g.DeploymentReplicaSetTerminatingReplicas, true
	case PodDeletionCost:
		return &g.PodDeletionCost, true
	case StaleControllerConsistencyReplicaSet:
		return &g.StaleControllerConsistencyReplicaSet, true
	}
	return nil, false
}

func spec(name Name) (Spec, bool) {
	i := slices.IndexFunc(specs, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return Spec{}, false
	}
	return specs[i], true
}

// Enabled reports whether gate name is enabled in g: its setting, or its
// v1.37 default. An unknown name is not enabled.
func (g Gates) Enabled(name Name) bool {
	f, ok := g.field(name)
	if !ok {
		return false
	}
	switch *f {
	case On:
		return true
	case Off:
		return false
	}
	s, _ := spec(name)
	return s.Default
}

// With returns g with gate name set to on. An unknown name, or a setting
// other than the default for a gate locked to it, is an error naming the
// gate, as kube-controller-manager's --feature-gates answers.
func (g Gates) With(name Name, on bool) (Gates, error) {
	f, ok := g.field(name)
	if !ok {
		return g, fmt.Errorf("unrecognized feature gate: %s", name)
	}
	if s, _ := spec(name); s.LockToDefault && s.Default != on {
		return g, fmt.Errorf("cannot set feature gate %s to %t, feature is locked to %t", name, on, s.Default)
	}
	*f = Off
	if on {
		*f = On
	}
	return g, nil
}

// Validate reports a setting that is not one of [Default], [On] and
// [Off], naming the gate.
func (g Gates) Validate() error {
	for _, s := range specs {
		f, _ := g.field(s.Name)
		if *f < Default || *f > Off {
			return fmt.Errorf("features: %s is set to %v; want Default, On or Off", s.Name, *f)
		}
	}
	return nil
}

// String renders the gates g sets away from the default, in
// --feature-gates syntax ("PodDeletionCost=false"), sorted by name; ""
// when every gate is at its default.
func (g Gates) String() string {
	var parts []string
	for _, s := range specs {
		if f, _ := g.field(s.Name); *f != Default {
			parts = append(parts, fmt.Sprintf("%s=%t", s.Name, g.Enabled(s.Name)))
		}
	}
	return strings.Join(parts, ",")
}
