package clustertest_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/internal/testhooks"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// The known races: ctrlkit's own Deployment and ReplicaSet controllers
// have fixes for races that stale caches cause. Each test here turns one
// fix off (a
// test-only switch of internal/testhooks) and shows that Explore finds
// the race, and that with the fix on the same exploration finds nothing.

// change is a change of the Deployment's image, after some time (none:
// at once, racing the controllers' reaction to what came before).
type change struct {
	after time.Duration
	image string
}

// rolloutScenario creates a Deployment of replicas pods, changes its
// image in the midst of its rollouts and waits for the last rollout.
func rolloutScenario(strategy appsv1.DeploymentStrategy, replicas int32, changes ...change) clustertest.Scenario {
	return func(t testing.TB, c *clustertest.Cluster) {
		labels := map[string]string{"app": "web"}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Strategy: strategy, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}}}
		if err := c.Client().Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		for _, ch := range changes {
			image := ch.image
			if ch.after > 0 {
				c.Advance(ch.after)
			}
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				var cur appsv1.Deployment
				if err := c.Client().Get(t.Context(), client.ObjectKeyFromObject(d), &cur); err != nil {
					return err
				}
				cur.Spec.Template.Spec.Containers[0].Image = image
				return c.Client().Update(t.Context(), &cur)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		c.MustRunUntil("rolled out", webRolledOut(t, c, replicas), time.Hour)
	}
}

func webRolledOut(t testing.TB, c *clustertest.Cluster, replicas int32) func() bool {
	return func() bool {
		var d appsv1.Deployment
		if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "web"}, &d); err != nil {
			t.Fatal(err)
		}
		st := d.Status
		return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == replicas && st.AvailableReplicas == replicas && st.Replicas == replicas
	}
}

// noRecreateOverlap: a pod of a Recreate Deployment is created only when
// no pod of another of its ReplicaSets still runs (terminating ones
// included: Recreate waits until they are gone).
var noRecreateOverlap = clustertest.Property{Name: "recreate without overlap", Always: func(s *clustertest.State) error {
	for _, w := range s.Writes() {
		pod, ok := w.Object.(*corev1.Pod)
		if !ok || w.Type != "ADDED" {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			continue
		}
		rs, _ := s.Get("replicasets", pod.Namespace, ref.Name).(*appsv1.ReplicaSet)
		dref := metav1.GetControllerOfNoCopy(rs)
		if rs == nil || dref == nil {
			continue
		}
		d, _ := s.Get("deployments", pod.Namespace, dref.Name).(*appsv1.Deployment)
		if d == nil || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			continue
		}
		for _, other := range clustertest.ObjectsOf[*corev1.Pod](s, "pods") {
			oref := metav1.GetControllerOfNoCopy(other)
			if other.Namespace != pod.Namespace || oref == nil || oref.UID == ref.UID || other.Status.Phase == corev1.PodSucceeded || other.Status.Phase == corev1.PodFailed {
				continue
			}
			if ors, _ := s.Get("replicasets", pod.Namespace, oref.Name).(*appsv1.ReplicaSet); ors != nil && metav1.IsControlledBy(ors, d) {
				return fmt.Errorf("pod %s of replicaset %s created while pod %s of replicaset %s still runs (Recreate)", pod.Name, ref.Name, other.Name, oref.Name)
			}
		}
	}
	return nil
}}

func knownRaceOptions(t *testing.T, seeds int) clustertest.ExploreOptions {
	return clustertest.ExploreOptions{
		Options: clustertest.Options{Kubelet: memcluster.KubeletConfig{
			Model: memcluster.RandomModel(memcluster.DefaultPodBehavior(), time.Second, 5*time.Second)}},
		Seeds:      seeds,
		ShrinkRuns: 100,
		Properties: []clustertest.Property{noRecreateOverlap, clustertest.DeploymentsCheck(), clustertest.NoExtraPods(),
			clustertest.NoLostPods(), clustertest.Converges(time.Hour)},
	}
}

// knownRace is one fix and how to show its race.
type knownRace struct {
	name     string
	off      *atomic.Bool // the switch that turns the fix off
	scenario clustertest.Scenario
	perturb  clustertest.Perturbations
	faults   memcluster.Faults // injected from the start
	want     string            // the property the race breaks
	// replay is what TestExploreFindsKnownRaces found with the fix off
	// (on this bench, as it is: explore again after a change to it).
	replay string
}

var knownRaces = []knownRace{
	{name: "old statuses observed before Recreate", off: &testhooks.TrustOldStatus,
		scenario: rolloutScenario(appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, 3,
			change{0, "web:2"}, change{3 * time.Second, "web:3"}),
		perturb: clustertest.PerturbLag,
		want:    noRecreateOverlap.Name,
		replay:  "seed=4 schedule=19:1"},
	{name: "new status observed before scale-down", off: &testhooks.TrustNewStatus,
		scenario: rolloutScenario(appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptrTo(intstr.FromInt32(1)), MaxUnavailable: ptrTo(intstr.FromInt32(1))}}, 4,
			change{2 * time.Second, "web:2"}, change{4 * time.Second, "web:1"}, change{0, "web:2"}),
		perturb: clustertest.PerturbLag,
		want:    "planner.Check",
		replay:  "seed=38 schedule=119:lag1=10s"},
	// A second template change while the ReplicaSet watch lags behind the
	// controller's own create of the first one's ReplicaSet: the sync that
	// does not wait for it creates another new ReplicaSet, of the same
	// revision, beside it (surge exceeded).
	{name: "own creates awaited", off: &testhooks.ForgetOwnCreates,
		scenario: rolloutScenario(appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptrTo(intstr.FromInt32(1)), MaxUnavailable: ptrTo(intstr.FromInt32(0))}}, 3,
			change{2 * time.Second, "web:2"}, change{100 * time.Millisecond, "web:3"}),
		perturb: clustertest.PerturbLag,
		want:    "planner.Check",
		replay:  "seed=101 schedule=25:lag0=10s"},
	// A scale-down whose pod deletions happen but answer an error, while
	// the pod watch lags: a deletion no longer expected, its pod still
	// active in the cache, the next sync deletes another pod.
	{name: "failed deletes settled", off: &testhooks.LowerFailedDeletes,
		scenario: scaleDownScenario(5, 2),
		perturb:  clustertest.PerturbLag,
		faults:   ambiguousPodDeletes(),
		want:     "no lost pods",
		replay:   "seed=64 schedule=65:1,66:lag3=10s,68:2"},
}

func ptrTo[T any](v T) *T { return &v }

// TestExploreFindsKnownRaces explores each fix turned off until it finds
// the race (CLUSTERTEST_KNOWN_RACES=1: up to 2,000 seeds each, minutes),
// and with it on finds nothing in as many seeds.
func TestExploreFindsKnownRaces(t *testing.T) {
	if os.Getenv("CLUSTERTEST_KNOWN_RACES") == "" {
		t.Skip("CLUSTERTEST_KNOWN_RACES=1 explores each known race (see TestKnownRaceReplays for the default suite)")
	}
	for _, r := range knownRaces {
		t.Run(r.name, func(t *testing.T) {
			opts := knownRaceOptions(t, 2000)
			opts.Options.Perturb, opts.Options.Faults = r.perturb, r.faults
			opts.ExpectViolation = true
			r.off.Store(true)
			start := time.Now()
			v := clustertest.Explore(t, opts, r.scenario)
			r.off.Store(false)
			if v == nil {
				return
			}
			t.Logf("found in %v wall: %s", time.Since(start).Round(time.Millisecond), v.Replay)
			if v.Property != r.want {
				t.Errorf("violated %q (%s), want %q", v.Property, v.Message, r.want)
			}
			if len(v.Schedule) > 12 {
				t.Errorf("shrunk to %d choices, want at most 12", len(v.Schedule))
			}
			opts.ExpectViolation = false
			opts.Seeds = v.Explored
			clustertest.Explore(t, opts, r.scenario)
		})
	}
}

// TestKnownRaceReplays replays what exploration found for each known race:
// with the fix off the race breaks its property, with it on the same
// schedule breaks nothing.
func TestKnownRaceReplays(t *testing.T) {
	for _, r := range knownRaces {
		t.Run(r.name, func(t *testing.T) {
			opts := knownRaceOptions(t, 1)
			opts.Options.Perturb, opts.Options.Faults = r.perturb, r.faults
			opts.Replay, opts.ExpectViolation = r.replay, true
			opts.Logf = func(string, ...any) {}
			r.off.Store(true)
			v := clustertest.Explore(t, opts, r.scenario)
			r.off.Store(false)
			if v != nil && v.Property != r.want {
				t.Errorf("violated %q (%s), want %q", v.Property, v.Message, r.want)
			}
			if t.Failed() {
				t.Fatalf("the replay %q no longer shows the race: the bench's steps moved; run CLUSTERTEST_KNOWN_RACES=1 go test -run TestExploreFindsKnownRaces and keep its replay line", r.replay)
			}
			opts.ExpectViolation = false
			clustertest.Explore(t, opts, r.scenario)
		})
	}
}
