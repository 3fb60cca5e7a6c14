package clustertest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ctrlkit/ctrlkit/memcluster"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// Explore finds a race in an operator: the operator of this example
// (shopReconciler) gives each ConfigMap labelled app a Deployment, found by
// label in its Manager's cache and created with a generated name when the
// cache has none. A reconcile that runs before the cache has seen the
// previous create makes a second Deployment. In the canonical order that
// never happens; among the orders a seed may choose, it does.
//
// The property says what must hold at every step: at most one Deployment
// per ConfigMap. The scenario is the body of a clustertest.Test. asTest
// stands in for the test function (an Example has no *testing.T).
func ExampleExplore() {
	oneDeployment := clustertest.Property{
		Name: "one deployment per configmap",
		Always: func(s *clustertest.State) error {
			owned := map[string][]string{}
			for _, d := range clustertest.ObjectsOf[*appsv1.Deployment](s, "deployments") {
				if ref := metav1.GetControllerOfNoCopy(d); ref != nil && ref.Kind == "ConfigMap" {
					owned[ref.Name] = append(owned[ref.Name], d.Name)
				}
			}
			for cm, ds := range owned {
				if len(ds) > 1 {
					return fmt.Errorf("configmap default/%s has %d deployments: %s", cm, len(ds), strings.Join(ds, ", "))
				}
			}
			return nil
		},
	}
	scenario := func(generateName bool) clustertest.Scenario {
		return func(t testing.TB, c *clustertest.Cluster) {
			mgr := c.NewManager(ctrl.Options{})
			if err := setupShop(mgr, generateName); err != nil {
				t.Fatal(err)
			}
			c.Start(mgr)
			c.Advance(time.Second) // the Manager's caches sync
			for _, name := range []string{"shop", "blog"} {
				if err := c.Client().Create(t.Context(), shopConfigMap(name)); err != nil {
					t.Fatal(err)
				}
			}
			c.MustRunUntil("both ready", func() bool { return readyConfigMaps(t, c) == 2 }, time.Hour)
		}
	}

	var found, fixed *clustertest.Violation
	asTest("ExampleExplore", func(t *testing.T) {
		opts := clustertest.ExploreOptions{
			Seeds:           10, // CLUSTERTEST_SEEDS=2000 before a release
			Properties:      []clustertest.Property{oneDeployment, clustertest.Converges(time.Hour)},
			ExpectViolation: true,                    // this test shows the race is found
			Logf:            func(string, ...any) {}, // the report is printed below
		}
		found = clustertest.Explore(t, opts, scenario(true))
		opts.ExpectViolation = false
		fixed = clustertest.Explore(t, opts, scenario(false))
	})
	if found == nil || fixed != nil {
		fmt.Println("unexpected:", found, fixed) // Explore has failed the test, with its report
		return
	}
	fmt.Printf("found: %s\n  %s\n  replay: %s\n", found.Property, found.Message, found.Replay)
	fmt.Println("fixed: no violation in 10 seeds")
	// Output:
	// found: one deployment per configmap
	//   configmap default/shop has 2 deployments: shop-459rm, shop-52lrn
	//   replay: seed=6 schedule=22:2
	// fixed: no violation in 10 seeds
}

// A fault scenario: the API server answers 80% of the updates of
// ConfigMaps with 409 Conflict, as it would if other writers kept changing
// them. The operator of this example returns the error and
// controller-runtime retries the key with its backoff (5 ms, doubling):
// the test checks that the shop becomes ready all the same, and counts in
// the trace the conflicts injected and the one the operator caused itself
// (an update from a cache one write behind). The same seed gives the same
// faults, run after run, and the backoff takes virtual time, not wall
// time.
func ExampleOptions_faults() {
	var readyAfter time.Duration
	var injected, real int
	asTest("ExampleOptions_faults", func(t *testing.T) {
		opts := clustertest.Options{Faults: memcluster.Faults{Rules: []memcluster.FaultRule{
			{Verb: "update", Resource: "configmaps", Rate: 0.8, Reason: metav1.StatusReasonConflict},
		}}}
		clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
			mgr := c.NewManager(ctrl.Options{})
			if err := setupShop(mgr, false); err != nil {
				t.Fatal(err)
			}
			c.Start(mgr)
			c.Advance(time.Second)
			start := c.Now()
			if err := c.Client().Create(t.Context(), shopConfigMap("shop")); err != nil {
				t.Fatal(err)
			}
			c.MustRunUntil("shop ready", func() bool { return readyConfigMaps(t, c) == 1 }, time.Hour)
			readyAfter, injected, real = c.Now()-start, 0, 0
			for _, line := range c.Trace() {
				switch {
				case strings.HasSuffix(line, ": 409 (injected 409 Conflict)"):
					injected++
				case strings.HasSuffix(line, ": 409"):
					real++ // an update from a cache one write behind
				}
			}
		})
	})
	fmt.Printf("ready after %v of virtual time, through %d injected conflicts and %d of its own\n", readyAfter, injected, real)
	// Output:
	// ready after 12.235s of virtual time, through 12 injected conflicts and 1 of its own
}
