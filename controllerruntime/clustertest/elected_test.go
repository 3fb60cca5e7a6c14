package clustertest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// heartbeat is a leader's background task: every 5 s it stamps each App
// with a heartbeat annotation. The mistake (background) is to write with
// a context of its own instead of the one the Manager gives it: a leader
// that stalls, loses its lease and stops still has that write in flight,
// and it lands once the stall ends, after another instance took over.
type heartbeat struct {
	client.Client
	background bool
}

func (h *heartbeat) Start(ctx context.Context) error {
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
		wctx := ctx
		if h.background {
			wctx = context.Background()
		}
		var apps AppList
		if err := h.List(ctx, &apps); err != nil {
			continue
		}
		for _, a := range apps.Items {
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"example.com/heartbeat":"%d"}}}`, n)
			_ = h.Patch(wctx, &a, client.RawPatch(types.MergePatchType, patch))
		}
	}
}

func electedScenario(background bool) clustertest.Scenario {
	return func(t testing.TB, c *clustertest.Cluster) {
		c.StartLeaderElected("app-operator", 2, ctrl.Options{}, func(mgr manager.Manager) error {
			if err := ctrl.NewControllerManagedBy(mgr).For(&App{}).Complete(&observeReconciler{Client: mgr.GetClient()}); err != nil {
				return err
			}
			return mgr.Add(&heartbeat{Client: mgr.GetClient(), background: background})
		})
		c.Advance(time.Second)
		if err := c.Client().Create(t.Context(), newApp("shop", "shop:1", 1)); err != nil {
			t.Fatal(err)
		}
		c.Advance(2 * time.Minute)
	}
}

func electedOptions(t *testing.T) clustertest.ExploreOptions {
	return clustertest.ExploreOptions{
		Options:    clustertest.Options{Scheme: appScheme(t), Types: []client.Object{&App{}}, Perturb: clustertest.PerturbHandover},
		Seeds:      30,
		Properties: []clustertest.Property{clustertest.LeaderOnlyWrites(), statusObserved},
	}
}

func TestExploreFindsALeaderWritingAfterItsLease(t *testing.T) {
	opts := electedOptions(t)
	opts.ExpectViolation = true
	opts.Logf = t.Logf
	v := clustertest.Explore(t, opts, electedScenario(true))
	if v == nil {
		t.FailNow()
	}
	if v.Property != "only the leader writes" || !strings.Contains(v.Schedule.String(), "handover") {
		t.Fatalf("violated %q (%s) with %q", v.Property, v.Message, v.Schedule)
	}
	r := electedOptions(t)
	r.Replay, r.ExpectViolation, r.Logf = v.Replay, true, func(string, ...any) {}
	if w := clustertest.Explore(t, r, electedScenario(true)); w == nil || w.Message != v.Message {
		t.Errorf("the replay of %s did not break %q again", v.Replay, v.Property)
	}
}

func TestExploreFindsNothingInALeaderThatStopsWithItsLease(t *testing.T) {
	opts := electedOptions(t)
	if raceEnabled {
		opts.Seeds = 10
	}
	handovers, n := benchesWith("starts again as a standby")
	opts.Properties = append(opts.Properties, handovers)
	clustertest.Explore(t, opts, electedScenario(false))
	if n.Load() == 0 {
		t.Errorf("no bench of %d handed the lease over", opts.Seeds)
	}
}

// TestLeaderElectionOneLeads: without exploration, one instance leads
// and the other waits; the leader's writes are its own.
func TestLeaderElectionOneLeads(t *testing.T) {
	clustertest.Test(t, benchOptions(t, 1), func(t *testing.T, c *clustertest.Cluster) {
		c.StartLeaderElected("app-operator", 2, ctrl.Options{}, func(mgr manager.Manager) error {
			return ctrl.NewControllerManagedBy(mgr).For(&App{}).Complete(&observeReconciler{Client: mgr.GetClient()})
		})
		c.Advance(time.Second)
		if err := c.Client().Create(t.Context(), newApp("shop", "shop:1", 1)); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("status observed", func() bool {
			var a App
			if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "shop"}, &a); err != nil {
				t.Fatal(err)
			}
			return a.Status.ObservedGeneration == a.Generation
		}, time.Minute)
		trace := strings.Join(c.Trace(), "\n")
		if strings.Count(trace, " leads (lease kube-system/app-operator)") != 1 {
			t.Errorf("want one leader:\n%s", trace)
		}
	})
}
