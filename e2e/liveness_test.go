package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// Liveness: a Deployment whose spec can be met never ends with nothing
// left to do and its spec unmet. The simulation's clock knows when nothing
// is left to do, as a fact (clock.ErrStalled: no tracked work, no timer
// pending): nothing will ever happen again. At every such stall, be it
// while a test waits for the cluster to converge or while it lets time
// run between two changes, checkLiveness fails the test if a Deployment
// that can be met is not rolled out: a controller stopped with work left,
// which is a rollout stuck in production.
//
// A Deployment can be met unless it is paused or its template runs an
// image whose pods the simulated kubelet fails (app:bad never pulls,
// app:crash crash-loops): such a rollout rightly stops unfinished, with
// nothing to do until the user changes it.

// canBeMet reports whether d's spec can be met: not paused, and its pods
// run (see above).
func canBeMet(d *appsv1.Deployment) bool {
	if d.Spec.Paused {
		return false
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if slices.Contains(failingImages, c.Image) {
			return false
		}
	}
	return true
}

// failingImages are the images whose pods the worlds' kubelets fail.
var failingImages = []string{"app:bad", "app:crash"}

// livenessProblem names a Deployment of s that can be met and is not
// rolled out, with why; "" when there is none.
func livenessProblem(s *state) string {
	rssOf, podsOf := s.owned()
	for _, d := range s.sortedDeployments() {
		if !canBeMet(d) {
			continue
		}
		if p := deploymentProblem(d, rssOf[d.UID], podsOf); p != "" {
			return fmt.Sprintf("deployment %s (image %s, %d replicas) can be met but is not rolled out: %s",
				d.Name, d.Spec.Template.Spec.Containers[0].Image, *d.Spec.Replicas, p)
		}
	}
	return ""
}

// checkLiveness fails the test if, at a stall (nothing left to do), a
// Deployment that can be met is not rolled out.
func (w *world) checkLiveness() {
	w.tb.Helper()
	var live *state
	w.write("list the cluster", func(ctx context.Context) (err error) {
		live, err = liveState(ctx, w.c)
		return err
	})
	if p := livenessProblem(live); p != "" {
		w.tb.Fatalf("liveness violated at +%v: nothing is left to do (no work, no timer pending), and %s\n%s%s",
			w.now(), p, live, w.diagnose())
	}
}

// A controller that gives up on a Deployment that can be met stops with
// work left, and checkLiveness says so at the stall: here a Deployment
// controller that drops a key after two failed retries (MaxRetries;
// upstream's drops it after 15) while the API server fails every
// ReplicaSet create for a minute. The stall comes as soon as the key is
// dropped (nothing is left to do: no requeue, no timer), long before the
// end of the run. With retries unbounded, the same run converges once the
// API server recovers.
func TestLivenessCatchesAStall(t *testing.T) {
	run := func(maxRetries int) captured {
		return capture(t, t.Name(), func(tb testing.TB) {
			w := newWorld(tb, worldConfig{Seed: 1,
				Deployment: func(c *deployment.ControllerConfig) { c.MaxRetries = maxRetries },
				Faults: memcluster.Faults{Rules: []memcluster.FaultRule{
					{Verb: "create", Resource: "replicasets", Rate: 1, Reason: metav1.StatusReasonServiceUnavailable}}}})
			w.create(newDeployment("web", 2, "app:1"))
			w.runFor(time.Minute)
			w.setFaults(memcluster.Faults{})
			w.runFor(time.Hour)
			w.converge(time.Hour)
		})
	}
	stuck := run(2)
	if !stuck.failed {
		t.Fatal("a Deployment controller that gave up: the run passed")
	}
	const want = "liveness violated at +"
	if !strings.Contains(stuck.errors[0], want) || !strings.Contains(stuck.errors[0], "deployment web (image app:1, 2 replicas) can be met but is not rolled out") {
		t.Errorf("the failure = %q; want one containing %q, naming deployment web", stuck.errors[0], want)
	}
	t.Logf("the stuck run: %.600s", stuck.errors[0])
	if healthy := run(0); healthy.failed {
		t.Errorf("with unbounded retries, the run fails: %s", strings.Join(healthy.errors, "\n"))
	}
}
