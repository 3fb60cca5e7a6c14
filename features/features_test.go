package features_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctrlkit/ctrlkit/features"
)

func TestGates(t *testing.T) {
	var zero features.Gates
	for _, s := range features.Known() {
		if got := zero.Enabled(s.Name); got != s.Default {
			t.Errorf("Gates{}.Enabled(%s) = %t; want the v1.37 default %t", s.Name, got, s.Default)
		}
		off, err := zero.With(s.Name, false)
		if err != nil {
			t.Fatalf("With(%s, false): %v", s.Name, err)
		}
		if off.Enabled(s.Name) {
			t.Errorf("With(%s, false).Enabled = true", s.Name)
		}
		on, err := off.With(s.Name, true)
		if err != nil || !on.Enabled(s.Name) {
			t.Errorf("With(%s, true) = %v, %v; want it enabled", s.Name, on, err)
		}
	}
	if zero.Enabled("Foo") {
		t.Errorf("an unknown gate is enabled")
	}
	if _, err := zero.With("Foo", true); err == nil || err.Error() != "unrecognized feature gate: Foo" {
		t.Errorf("With(Foo) error = %v; want kube-controller-manager's %q", err, "unrecognized feature gate: Foo")
	}
	if err := (features.Gates{PodDeletionCost: 7}).Validate(); err == nil {
		t.Errorf("Validate accepted a setting of 7")
	}
	if err := (features.Gates{PodDeletionCost: features.Off}).Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestGatesString(t *testing.T) {
	for _, tc := range []struct {
		g    features.Gates
		want string
	}{
		{features.Gates{}, ""},
		{features.Gates{PodDeletionCost: features.Off}, "PodDeletionCost=false"},
		{features.Gates{PodDeletionCost: features.On, DeploymentReplicaSetTerminatingReplicas: features.Off},
			"DeploymentReplicaSetTerminatingReplicas=false,PodDeletionCost=true"},
	} {
		if got := tc.g.String(); got != tc.want {
			t.Errorf("%#v.String() = %q; want %q", tc.g, got, tc.want)
		}
	}
}

func TestKnown(t *testing.T) {
	got := features.Known()
	got[0].DependsOn = append(got[0].DependsOn, "Mutated")
	want := []features.Spec{
		{Name: features.DeploymentReplicaSetTerminatingReplicas, Default: true, PreRelease: "BETA", Since: "1.35"},
		{Name: features.PodDeletionCost, Default: true, PreRelease: "BETA", Since: "1.22"},
		{Name: features.StaleControllerConsistencyReplicaSet, Default: true, PreRelease: "BETA", Since: "1.36", DependsOn: []features.Name{"AtomicFIFO"}},
	}
	if diff := cmp.Diff(want, features.Known()); diff != "" {
		t.Errorf("Known() mismatch (-want +got):\n%s", diff)
	}
}

func Example() {
	gates := features.Gates{PodDeletionCost: features.Off}
	fmt.Println(gates.Enabled(features.PodDeletionCost), gates.Enabled(features.DeploymentReplicaSetTerminatingReplicas))
	gates, err := gates.With(features.DeploymentReplicaSetTerminatingReplicas, false)
	fmt.Println(gates, err)
	_, err = gates.With("LogarithmicScaleDown", true)
	fmt.Println(err)
	// Output:
	// false true
	// DeploymentReplicaSetTerminatingReplicas=false,PodDeletionCost=false <nil>
	// unrecognized feature gate: LogarithmicScaleDown
}
