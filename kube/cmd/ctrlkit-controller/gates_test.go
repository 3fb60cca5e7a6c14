package main

import (
	"strings"
	"testing"

	"github.com/ctrlkit/ctrlkit/features"
)

// --feature-gates takes kube-controller-manager's syntax and gives its
// answers (the messages below are kube-controller-manager v1.37.1's, as
// its binary prints them; the e2e suite compares the two binaries).
func TestFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   features.Gates
		err    string
	}{
		{values: nil, want: features.Gates{DeploymentReplicaSetTerminatingReplicas: features.On, PodDeletionCost: features.On, StaleControllerConsistencyReplicaSet: features.On}},
		{values: []string{"PodDeletionCost=false"}, want: features.Gates{DeploymentReplicaSetTerminatingReplicas: features.On, PodDeletionCost: features.Off, StaleControllerConsistencyReplicaSet: features.On}},
		{values: []string{"PodDeletionCost=false", "PodDeletionCost=true,DeploymentReplicaSetTerminatingReplicas=false"},
			want: features.Gates{DeploymentReplicaSetTerminatingReplicas: features.Off, PodDeletionCost: features.On, StaleControllerConsistencyReplicaSet: features.On}},
		{values: []string{"StaleControllerConsistencyReplicaSet=false,AtomicFIFO=false,WatchListClient=false"},
			want: features.Gates{DeploymentReplicaSetTerminatingReplicas: features.On, PodDeletionCost: features.On, StaleControllerConsistencyReplicaSet: features.Off}},
		{values: []string{"AllBeta=false"},
			want: features.Gates{DeploymentReplicaSetTerminatingReplicas: features.Off, PodDeletionCost: features.Off, StaleControllerConsistencyReplicaSet: features.Off}},
		{values: []string{"PodDeletionCost=false,Foo=true"}, err: "unrecognized feature gate: Foo"},
		{values: []string{"LogarithmicScaleDown=false"}, err: "unrecognized feature gate: LogarithmicScaleDown"},
		{values: []string{"InOrderInformers=false"}, err: "cannot set feature gate InOrderInformers to false, feature is locked to true"},
		{values: []string{"AtomicFIFO=false"}, err: "StaleControllerConsistencyReplicaSet is enabled, but depends on features that are disabled: [AtomicFIFO]"},
		{values: []string{"PodDeletionCost=maybe"}, err: `invalid value of PodDeletionCost=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{values: []string{"PodDeletionCost"}, err: "missing bool value for PodDeletionCost"},
	} {
		fg, err := newFeatureGate()
		if err != nil {
			t.Fatal(err)
		}
		got, err := featureGates(fg, tc.values)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("featureGates(%q) error = %v; want %q", tc.values, err, tc.err)
			}
		case err != nil:
			t.Errorf("featureGates(%q): %v", tc.values, err)
		case got != tc.want:
			t.Errorf("featureGates(%q) = %q; want %q", tc.values, got, tc.want)
		}
	}
}

// The flag is registered, repeatable, and its help lists the gates.
func TestFeatureGatesFlagParses(t *testing.T) {
	o, err := parseFlags("ctrlkit-controller", []string{"--feature-gates=PodDeletionCost=false", "--feature-gates=Foo=true"})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.featureGates.String(); got != "PodDeletionCost=false,Foo=true" {
		t.Errorf("--feature-gates values = %q", got)
	}
	for _, name := range []string{"PodDeletionCost=true|false (BETA - default=true)", "DeploymentReplicaSetTerminatingReplicas=", "StaleControllerConsistencyReplicaSet=", "WatchListClient="} {
		if !strings.Contains(gatesUsage(), name) {
			t.Errorf("--feature-gates help does not list %s:\n%s", name, gatesUsage())
		}
	}
}
