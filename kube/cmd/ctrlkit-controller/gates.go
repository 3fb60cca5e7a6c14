package main

import (
	"fmt"
	"strings"

	"github.com/ctrlkit/ctrlkit/features"
	"k8s.io/apimachinery/pkg/util/version"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/component-base/featuregate"
)

// kubeVersion is the Kubernetes version whose gates ctrlkit-controller
// takes, as kube-controller-manager v1.37 emulates its own.
const kubeVersion = "1.37"

// newFeatureGate returns the feature gate behind --feature-gates: that of
// k8s.io/component-base, the library kube-controller-manager parses its
// --feature-gates with, at its version, with the gates ctrlkit's
// controllers consult (features.Known) and client-go's, registered as
// kube-controller-manager registers them, and the dependency it declares
// (StaleControllerConsistencyReplicaSet on AtomicFIFO). So the same value
// gets the same answer: an unknown gate, a gate locked to its default, a
// gate on whose dependency is off are refused with its messages, and
// setting a GA gate logs its warning. Only the gates of other controllers
// differ: kube-controller-manager knows them, this program does not
// (they are unrecognized here).
func newFeatureGate() (featuregate.MutableVersionedFeatureGate, error) {
	fg := featuregate.NewVersionedFeatureGate(version.MustParse(kubeVersion))
	specs := map[featuregate.Feature]featuregate.VersionedSpecs{}
	deps := map[featuregate.Feature][]featuregate.Feature{}
	for _, s := range features.Known() {
		spec, err := featureSpec(s.PreRelease, featuregate.FeatureSpec{Version: version.MustParse(s.Since), Default: s.Default, LockToDefault: s.LockToDefault})
		if err != nil {
			return nil, err
		}
		name := featuregate.Feature(s.Name)
		specs[name] = featuregate.VersionedSpecs{spec}
		for _, d := range s.DependsOn {
			deps[name] = append(deps[name], featuregate.Feature(d))
		}
	}
	if err := fg.AddVersioned(specs); err != nil {
		return nil, err
	}
	if err := clientfeatures.AddVersionedFeaturesToExistingFeatureGates(clientGates{fg}); err != nil {
		return nil, err
	}
	if err := fg.AddDependencies(deps); err != nil {
		return nil, err
	}
	return fg, nil
}

// featureSpec returns spec at the stage named stage ("ALPHA", "BETA",
// "" for GA, "DEPRECATED").
func featureSpec(stage string, spec featuregate.FeatureSpec) (featuregate.FeatureSpec, error) {
	switch stage {
	case string(featuregate.Alpha):
		spec.PreRelease = featuregate.Alpha
	case string(featuregate.Beta):
		spec.PreRelease = featuregate.Beta
	case string(featuregate.GA):
		spec.PreRelease = featuregate.GA
	case string(featuregate.Deprecated):
		spec.PreRelease = featuregate.Deprecated
	default:
		return spec, fmt.Errorf("unknown feature stage %q", stage)
	}
	return spec, nil
}

// clientGates lets client-go's gates live in fg: it registers them there
// (clientfeatures.VersionedRegistry), and, once client-go is pointed at
// it (clientfeatures.ReplaceFeatureGates), answers client-go's questions
// from fg (clientfeatures.Gates), as kube-controller-manager does with
// its own gate.
type clientGates struct {
	fg featuregate.MutableVersionedFeatureGate
}

func (c clientGates) Enabled(key clientfeatures.Feature) bool {
	return c.fg.Enabled(featuregate.Feature(key))
}

func (c clientGates) AddVersioned(in map[clientfeatures.Feature]clientfeatures.VersionedSpecs) error {
	out := make(map[featuregate.Feature]featuregate.VersionedSpecs, len(in))
	for name, specs := range in {
		for _, s := range specs {
			spec, err := featureSpec(string(s.PreRelease), featuregate.FeatureSpec{Default: s.Default, LockToDefault: s.LockToDefault, Version: s.Version})
			if err != nil {
				return fmt.Errorf("client-go's gate %s: %w", name, err)
			}
			out[featuregate.Feature(name)] = append(out[featuregate.Feature(name)], spec)
		}
	}
	return c.fg.AddVersioned(out)
}

var (
	_ clientfeatures.Gates             = clientGates{}
	_ clientfeatures.VersionedRegistry = clientGates{}
)

// gateValues collects the values of every --feature-gates flag, in order.
type gateValues []string

func (g *gateValues) String() string { return strings.Join(*g, ",") }

func (g *gateValues) Set(s string) error {
	*g = append(*g, s)
	return nil
}

// featureGates applies the --feature-gates values to fg, each in turn (a
// later value overrides an earlier one, as repeated flags do for
// kube-controller-manager), and returns the gates of ctrlkit's
// controllers. The error is component-base's, as kube-controller-manager
// reports it; its warnings (setting a GA gate) go to klog, as there.
func featureGates(fg featuregate.MutableVersionedFeatureGate, values []string) (features.Gates, error) {
	for _, v := range values {
		if err := fg.Set(v); err != nil {
			return features.Gates{}, err
		}
	}
	var g features.Gates
	for _, s := range features.Known() {
		var err error
		if g, err = g.With(s.Name, fg.Enabled(featuregate.Feature(s.Name))); err != nil {
			return features.Gates{}, err
		}
	}
	return g, nil
}

// gatesUsage is the help of --feature-gates: kube-controller-manager's
// words, and the gates this program knows.
func gatesUsage() string {
	fg, err := newFeatureGate()
	if err != nil {
		return "feature gates (" + err.Error() + ")"
	}
	return "A set of key=value pairs that describe feature gates for alpha/experimental features (kube-controller-manager's flag,\n" +
		"for the gates its Deployment and ReplicaSet controllers and client-go consult). Options are:\n" + strings.Join(fg.KnownFeatures(), "\n")
}
