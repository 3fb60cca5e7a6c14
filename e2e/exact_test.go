package e2e

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/internal/starve"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// exactScenarios are the simulations TestExactVirtualTime runs: the main
// example's rollout and update, a Recreate, a crash-looping update that
// passes its progress deadline, and 100 Deployments at once.
func exactScenarios() map[string]simConfig {
	crashHalf := func(pod *corev1.Pod, rnd *rand.Rand) memcluster.PodBehavior {
		b := memcluster.PodBehavior{StartDelay: time.Second, ReadyDelay: 2 * time.Second, ShutdownDelay: time.Second}
		if pod.Spec.Containers[0].Image == "app:2" && rnd.IntN(2) == 0 {
			b.Failure = memcluster.PodCrashLoop
		}
		return b
	}
	return map[string]simConfig{
		"main example":    {Deployments: 1, Replicas: 10, ToImage: "app:2"},
		"recreate":        {Deployments: 1, Replicas: 10, ToImage: "app:2", Strategy: appsv1.RecreateDeploymentStrategyType},
		"crash loop":      {Deployments: 1, Replicas: 10, ToImage: "app:2", Model: crashHalf, Deadline: 90},
		"100 deployments": {Deployments: 100, Replicas: 2, ToImage: "app:2"},
	}
}

// Virtual time is exact: it moves only when no work is left at the current
// instant, so a simulation takes the same virtual time and ends in the
// same state however starved of CPU it is, and whatever the number of
// workers. On a deterministic clock it also makes the same decisions in
// the same order, idle or starved: the same event trace for the same
// configuration (how many workers can take items changes the order in
// which the work of an instant gets its turns, not its outcome).
func TestExactVirtualTime(t *testing.T) {
	for name, cfg := range exactScenarios() {
		t.Run(name, func(t *testing.T) {
			cfg.Trace = true
			run := func(deterministic bool, workers int) simResult {
				c := cfg
				c.Deterministic, c.Workers = deterministic, workers
				return simulate(t, c)
			}
			want := run(true, 1)
			if len(want.Events) == 0 || len(want.Phases) != 2 {
				t.Fatalf("the run recorded %d events and %d phases; want some events and 2 phases", len(want.Events), len(want.Phases))
			}
			t.Logf("phases %v, %d events, %d objects", want.Phases, len(want.Events), len(want.Final))
			// A concurrent run interleaves the work of an instant in any
			// order: its events may differ, its timing and outcome not.
			concurrent := func(t *testing.T, got simResult) {
				t.Helper()
				if diff := cmp.Diff(want.Phases, got.Phases); diff != "" {
					t.Errorf("virtual durations differ (-deterministic +concurrent):\n%s", diff)
				}
				if diff := cmp.Diff(want.Final, got.Final); diff != "" {
					t.Errorf("final state differs (-deterministic +concurrent):\n%s", diff)
				}
			}
			same := func(t *testing.T, got simResult) {
				t.Helper()
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("run differs (-first +this):\n%s", diff)
				}
			}
			// The big scenario runs only what the acceptance needs: the
			// same trace starved, the same outcome concurrently.
			big := cfg.Deployments > 1
			var five simResult
			if !big {
				five = run(true, 5)
				concurrent(t, five)
				concurrent(t, run(false, 1))
			}
			concurrent(t, run(false, 5))
			// The starved runs run at once, each a burden on the others
			// too: as harsh a schedule as one after another, in less time.
			t.Run("starved", func(t *testing.T) {
				starve.CPU(t, 3) // ends when the parallel subtests have
				t.Run("trace", func(t *testing.T) {
					t.Parallel()
					same(t, run(true, 1))
				})
				if !big {
					t.Run("5 workers", func(t *testing.T) {
						t.Parallel()
						if diff := cmp.Diff(five, run(true, 5)); diff != "" {
							t.Errorf("run with 5 workers differs starved (-idle +starved):\n%s", diff)
						}
					})
				}
				t.Run("concurrent", func(t *testing.T) {
					t.Parallel()
					concurrent(t, run(false, 5))
				})
			})
		})
	}
}

func (r simResult) String() string {
	return fmt.Sprintf("phases %v, %d events, %d objects", r.Phases, len(r.Events), len(r.Final))
}
