package e2e

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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

// The controllers' informers list the cluster before anything is in it
// (at resourceVersion 0, as in a run whose informers start before its
// test creates its Deployments, which the concurrent mode allows), and
// watch from there. Meanwhile three Deployments are created, named in the
// reverse order of their creation. Every watch of Deployments ends before
// its second event. The Deployment informer watches again from the last
// version it received: when memcluster started a watch from "0" with the
// objects in name order, that was the newest Deployment's, and the other
// two never reached the cache. The Deployment controller never synced
// them, and nothing was left to do: a stall with two Deployments unmet,
// which the liveness check reports. In resourceVersion order the resumed
// watches miss nothing, and every Deployment rolls out.
func TestWatchResumedFromZeroMissesNothing(t *testing.T) {
	g := &closeSeconds{resource: "deployments"}
	w := newWorld(t, worldConfig{Seed: 1, Mode: clockMode{kind: serial}, Gate: g,
		Faults: memcluster.Faults{Rules: []memcluster.FaultRule{{Verb: "watch", Latency: 100 * time.Millisecond}}}})
	w.runFor(0) // the informers list the empty cluster, then wait to watch
	if rv := w.c.ResourceVersion(); rv != "0" {
		t.Fatalf("the cluster is at resourceVersion %s when the informers list it; want 0", rv)
	}
	for _, name := range []string{"web-c", "web-b", "web-a"} {
		w.create(newDeployment(name, 2, "app:1"))
	}
	w.converge(time.Hour)
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed == 0 {
		t.Fatal("no watch of Deployments was closed: the test shows nothing")
	}
	t.Logf("%d watches of Deployments closed before their second event", closed)
}
