package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// TestRandomisedGates is the family of randomised runs that switch
// feature gates mid-run: the random changes, faults and seeds of
// TestRandomised (from a stream of their own, so that a seed here is not
// the same run as there), and between changes the three gates of both
// running controllers are switched at random (default, on or off), as
// upstream's tests switch them in-process, and random pods get a random
// pod-deletion-cost. The invariants of package e2e hold at every state
// whatever the gates, and once everything has converged and been synced
// again on the last gates, every status has terminatingReplicas exactly
// when DeploymentReplicaSetTerminatingReplicas is on (kube-apiserver keeps
// a number a controller once wrote; only the controller clears it).
// Replay one with CTRLKIT_E2E_SEED, as TestRandomised.
func TestRandomisedGates(t *testing.T) {
	for _, seed := range seeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			randomGatesRun(t, seed)
		})
	}
}

func randomGatesRun(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 0x9a7e5))
	gates := randomGates(rnd)
	w := newWorld(t, worldConfig{Seed: seed, SeedEnv: true, Model: randomModel(rnd), Faults: randomFaults(rnd), FeatureGates: gates})
	t.Logf("faults: %+v; gates: %q", w.faults, gates)
	names := make([]string, 1+rnd.IntN(3))
	for i := range names {
		names[i] = fmt.Sprintf("g%d", i)
		d := newDeployment(names[i], int32(rnd.IntN(9)), goodImages[rnd.IntN(len(goodImages))])
		randomStrategy(rnd, d)
		d.Spec.ProgressDeadlineSeconds = ptr(int32(30 + rnd.IntN(600)))
		w.create(d)
	}
	if rnd.IntN(2) == 0 {
		w.converge(3 * time.Hour)
	}
	for range 4 + rnd.IntN(8) {
		switch rnd.IntN(4) {
		case 0:
			gates = randomGates(rnd)
			w.tb.Logf("+%v gates %q", w.now(), gates)
			w.setGates(gates)
		case 1:
			w.randomDeletionCost(rnd)
		default:
			w.randomChange(rnd, names[rnd.IntN(len(names))])
		}
		w.runFor(time.Duration(rnd.IntN(90)) * time.Second)
	}
	for _, name := range names { // make every rollout possible
		d := w.get(name)
		if d.Spec.Paused {
			w.patch(name, `{"spec":{"paused":false}}`)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img == "app:bad" || img == "app:crash" {
			w.setImage(name, "app:5")
		}
	}
	w.converge(6 * time.Hour)
	// Every object synced again on the last gates.
	w.touchReplicaSets()
	w.runFor(time.Minute)
	w.converge(time.Hour)
	t.Logf("converged at +%v on gates %q", w.now(), gates)
	w.checkTerminatingReplicas(gates.Enabled(features.DeploymentReplicaSetTerminatingReplicas))
}

// randomGates sets each gate to its default, on or off.
func randomGates(rnd *rand.Rand) features.Gates {
	pick := func() features.Setting {
		return []features.Setting{features.Default, features.On, features.Off}[rnd.IntN(3)]
	}
	return features.Gates{
		DeploymentReplicaSetTerminatingReplicas: pick(),
		PodDeletionCost:                         pick(),
		StaleControllerConsistencyReplicaSet:    pick(),
	}
}

// setGates switches the gates of both running controllers.
func (w *world) setGates(g features.Gates) {
	w.tb.Helper()
	if err := w.dc.Reconciler().SetFeatureGates(g); err != nil {
		w.tb.Fatal(err)
	}
	if err := w.rc.Reconciler().SetFeatureGates(g); err != nil {
		w.tb.Fatal(err)
	}
}

// randomDeletionCost gives a random pod a random pod-deletion-cost (or an
// invalid one, which counts as 0).
func (w *world) randomDeletionCost(rnd *rand.Rand) {
	w.tb.Helper()
	var pods []*corev1.Pod
	w.write("list pods", func(ctx context.Context) (err error) {
		pods, _, err = w.c.Pods(ns).List(ctx, metav1.ListOptions{})
		return err
	})
	if len(pods) == 0 {
		return
	}
	p := pods[rnd.IntN(len(pods))]
	cost := []string{"-100", "0", "100", "1000", "+5", "x"}[rnd.IntN(6)]
	w.tb.Logf("+%v pod %s: deletion cost %q", w.now(), p.Name, cost)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, replicaset.PodDeletionCostAnnotation, cost)
	// The pod may be gone by now: that is not a failure.
	_ = w.try(func(ctx context.Context) error {
		_, err := w.c.Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// touchReplicaSets annotates every ReplicaSet, so that both controllers
// sync each of them (and their Deployments) again.
func (w *world) touchReplicaSets() {
	w.tb.Helper()
	for _, rs := range w.allReplicaSets() {
		_ = w.try(func(ctx context.Context) error {
			_, err := w.c.ReplicaSets(ns).Patch(ctx, rs.Name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"e2e.ctrlkit.io/touched":"1"}}}`), metav1.PatchOptions{})
			return err
		})
	}
}

// checkTerminatingReplicas checks that every Deployment and ReplicaSet
// status has terminatingReplicas set exactly when on.
func (w *world) checkTerminatingReplicas(on bool) {
	w.tb.Helper()
	for _, rs := range w.allReplicaSets() {
		if (rs.Status.TerminatingReplicas != nil) != on {
			w.tb.Errorf("rs %s: terminatingReplicas = %v with DeploymentReplicaSetTerminatingReplicas on=%t", rs.Name, fmtPtr(rs.Status.TerminatingReplicas), on)
		}
	}
	var ds []*appsv1.Deployment
	w.write("list deployments", func(ctx context.Context) (err error) {
		ds, _, err = w.c.Deployments(ns).List(ctx, metav1.ListOptions{})
		return err
	})
	for _, d := range ds {
		if (d.Status.TerminatingReplicas != nil) != on {
			w.tb.Errorf("deployment %s: terminatingReplicas = %v with DeploymentReplicaSetTerminatingReplicas on=%t", d.Name, fmtPtr(d.Status.TerminatingReplicas), on)
		}
	}
}

// allReplicaSets lists the ReplicaSets of the namespace.
func (w *world) allReplicaSets() []*appsv1.ReplicaSet {
	w.tb.Helper()
	var rss []*appsv1.ReplicaSet
	w.write("list replicasets", func(ctx context.Context) (err error) {
		rss, _, err = w.c.ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err
	})
	return rss
}

func fmtPtr(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
