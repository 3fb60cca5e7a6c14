package e2e

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/internal/gate"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// closeSeconds ends every watch of resource instead of delivering its
// second event: the server closed the watch, and its client watches again
// from the last version it received.
type closeSeconds struct {
	resource  string
	mu        sync.Mutex
	delivered map[uint64]int
	closed    int
}

func (g *closeSeconds) Enter(_ context.Context, s gate.Step) error {
	if s.Kind != gate.StepDelivery || s.Resource != g.resource {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.delivered == nil {
		g.delivered = map[uint64]int{}
	}
	if g.delivered[s.Watch]++; g.delivered[s.Watch] == 2 {
		g.closed++
		return errors.New("watch closed by the test")
	}
	return nil
}

func (g *closeSeconds) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// listEmpty lets the informers of w list the cluster while it is still
// empty, at resourceVersion 1 (a fresh cluster's, as a fresh etcd's; the
// world's kubelet, which registers Nodes, is started late), so that they
// watch from "1": every object created meanwhile comes from the history.
func listEmpty(t *testing.T, w *world) {
	t.Helper()
	w.runFor(0)
	if rv := w.c.ResourceVersion(); rv != "1" {
		t.Fatalf("the cluster is at resourceVersion %s when the informers list it; want 1", rv)
	}
}

// The controllers' informers list the cluster before anything is in it
// and watch from there. Meanwhile three Deployments are created, named in
// the reverse order of their creation. Every watch of Deployments ends
// before its second event. The Deployment informer watches again from the
// last version it received. When memcluster started at resourceVersion 0,
// the informers watched from "0", which memcluster started with the
// objects in name order: the first was the newest Deployment's, and the
// other two never reached the cache. The Deployment controller never
// synced them, and nothing was left to do: a stall with two Deployments
// unmet, which the liveness check reports. Now memcluster starts at 1, as
// etcd, so the watch replays its history, and a watch from "0" sends
// objects in resourceVersion order (TestWatchFromZeroInVersionOrder in
// memcluster): either way the resumed watches miss nothing, and every
// Deployment rolls out.
func TestWatchResumedFromZeroMissesNothing(t *testing.T) {
	g := &closeSeconds{resource: "deployments"}
	w := newWorld(t, worldConfig{Seed: 1, Mode: clockMode{kind: serial}, Gate: g, LateKubelet: true,
		Faults: memcluster.Faults{Rules: []memcluster.FaultRule{{Verb: "watch", Latency: 100 * time.Millisecond}}}})
	listEmpty(t, w) // the informers list the empty cluster, then wait to watch
	for _, name := range []string{"web-c", "web-b", "web-a"} {
		w.create(newDeployment(name, 2, "app:1"))
	}
	w.startKubelet()
	w.converge(time.Hour)
	if g.count() == 0 {
		t.Fatal("no watch of Deployments was closed: the test shows nothing")
	}
	t.Logf("%d watches of Deployments closed before their second event", g.count())
}

// TestSeed7397EndState reaches for the end state of seed 7397 of
// TestRandomisedGates (issue 38) by the memcluster bug fixed then, and
// shows that the seed's Deployment rolls out. The seed's run failed once,
// in the old goroutine-concurrent mode, and never again; all it left is
// its end state: the new ReplicaSet of Deployment g0 (3 replicas of app:4)
// created, at generation 1 with observedGeneration 0, spec 3, status 0, no
// pods, and nothing left to do. Its cause is not known: see
// docs/replay.md. This is one way to that state, on the seed's own
// Deployment and feature gates: the ReplicaSet informer, shared by both
// controllers, lists the empty cluster and watches a second later, when
// g0's ReplicaSet and a newer one (of Deployment a0, which the seed's run
// did not have: with a single ReplicaSet the order cannot lose it) exist.
// Every watch of ReplicaSets ends before its second event. When memcluster
// started at resourceVersion 0 the watch was from "0", a0's came first in
// name order, the informer resumed after it, and g0's never reached the
// cache: the ReplicaSet controller never synced it. In resourceVersion
// order both are cached and both Deployments roll out; since memcluster
// starts at 1, as etcd, the informer watches from "1" and the path is
// closed a second way.
func TestSeed7397EndState(t *testing.T) {
	// TestRandomisedGates' draws for seed 7397, in its order.
	rnd := rand.New(rand.NewPCG(7397, 0x9a7e5))
	gates := randomGates(rnd)
	model := randomModel(rnd)
	randomFaults(rnd) // the seed's faults are left out: the gate below ends the watches
	if n := 1 + rnd.IntN(3); n != 1 {
		t.Fatalf("seed 7397 draws %d Deployments; its run had one", n)
	}
	g0 := newDeployment("g0", int32(rnd.IntN(9)), goodImages[rnd.IntN(len(goodImages))])
	randomStrategy(rnd, g0)
	g0.Spec.ProgressDeadlineSeconds = ptr(int32(30 + rnd.IntN(600)))
	ru := g0.Spec.Strategy.RollingUpdate
	if *g0.Spec.Replicas != 3 || g0.Spec.Template.Spec.Containers[0].Image != "app:4" || ru == nil ||
		*ru.MaxSurge != intstr.FromString("50%") || *ru.MaxUnavailable != intstr.FromInt32(1) {
		t.Fatalf("seed 7397 draws Deployment g0 as %+v, %+v; its run had 3 replicas of app:4, surge 50%%, unavailable 1",
			g0.Spec.Replicas, g0.Spec.Strategy)
	}
	if got, want := gates.String(), "PodDeletionCost=true,StaleControllerConsistencyReplicaSet=true"; got != want {
		t.Fatalf("seed 7397 draws the gates %q; its run had %q", got, want)
	}

	g := &closeSeconds{resource: "replicasets"}
	w := newWorld(t, worldConfig{Seed: 7397, Mode: clockMode{kind: serial}, Model: model, FeatureGates: gates,
		Gate: g, LateKubelet: true, Faults: memcluster.Faults{Rules: []memcluster.FaultRule{
			{Verb: "watch", Resource: "replicasets", Latency: time.Second}}}})
	listEmpty(t, w)
	w.create(g0)
	w.create(newDeployment("a0", 1, "app:1"))
	w.startKubelet()
	w.converge(time.Hour)
	if g.count() == 0 {
		t.Fatal("no watch of ReplicaSets was closed: the test shows nothing")
	}
}
