package clustertest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// livenessScenario creates a Deployment of a healthy image and one whose
// image never pulls, and returns at once: Liveness does the waiting.
func livenessScenario(t testing.TB, c *clustertest.Cluster) {
	for _, d := range []struct {
		name, image string
	}{{"web", "nginx:1.27"}, {"broken", "nginx:bad"}} {
		if err := c.Client().Create(t.Context(), webDeployment(d.name, 3, d.image)); err != nil {
			t.Fatal(err)
		}
	}
}

func livenessOptions() clustertest.ExploreOptions {
	healthy := memcluster.DefaultPodBehavior()
	bad := healthy
	bad.Failure = memcluster.PodBadImage
	return clustertest.ExploreOptions{
		Options: clustertest.Options{Kubelet: memcluster.KubeletConfig{
			Model: memcluster.ImageModel(map[string]memcluster.PodBehavior{"nginx:bad": bad}, memcluster.FixedModel(healthy))}},
		Seeds:      4,
		Properties: []clustertest.Property{clustertest.Liveness(time.Minute)},
	}
}

// On a healthy bench every Deployment that can be met rolls out, in
// every interleaving: Liveness holds. The Deployment whose pods never
// pull their image cannot be met, and stops unfinished: that is no
// stall.
func TestLivenessHoldsOnAHealthyBench(t *testing.T) {
	if v := clustertest.Explore(t, livenessOptions(), livenessScenario); v != nil {
		t.Fatalf("violated: %s", v.Message)
	}
}

// A bench whose ReplicaSet controller never runs (a planted stall: the
// Deployment controller creates the new ReplicaSet, and nothing creates
// its pods) leaves the healthy Deployment unfinished with nothing left to
// do: Liveness names it.
func TestLivenessCatchesAStall(t *testing.T) {
	opts := livenessOptions()
	opts.Options.Disable = clustertest.ReplicaSetController
	opts.Seeds, opts.ExpectViolation, opts.Logf = 1, true, func(string, ...any) {}
	v := clustertest.Explore(t, opts, livenessScenario)
	if v == nil {
		t.FailNow()
	}
	if v.Property != "liveness" {
		t.Fatalf("violated %q (%s); want liveness", v.Property, v.Message)
	}
	for _, want := range []string{"stalled: nothing moved from +",
		"deployment default/web can be met but is not rolled out",
		"replicaset web-", "spec 3, status 0 (generation 1 observed 0), 0 pods"} {
		if !strings.Contains(v.Message, want) {
			t.Errorf("the violation says %q; want it to say %q", v.Message, want)
		}
	}
}
