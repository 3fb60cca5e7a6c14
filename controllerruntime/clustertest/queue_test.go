package clustertest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// domainReconciler gives each App a domain: an App without a parent
// label its own, one with a parent label its parent's. Each reconcile
// makes an external call of 100 ms first. The mistake (fromMemory) is to
// look the parent's domain up in what the reconciler remembers of the
// parents it reconciled, assuming a parent, created first, is
// reconciled first; if it is not, the child is given up as an orphan.
// The fix reads the parent from the cache and waits until it is ready.
type domainReconciler struct {
	client.Client
	fromMemory bool

	mu      sync.Mutex
	domains map[string]string
}

func (r *domainReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app App
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if app.Status.ObservedGeneration == app.Generation {
		return ctrl.Result{}, nil
	}
	time.Sleep(100 * time.Millisecond) // the external call
	ready := true
	switch parent := app.Labels["parent"]; {
	case parent == "":
		r.mu.Lock()
		if r.domains == nil {
			r.domains = map[string]string{}
		}
		r.domains[app.Name] = app.Name + ".example.com"
		r.mu.Unlock()
	case r.fromMemory:
		r.mu.Lock()
		_, ready = r.domains[parent]
		r.mu.Unlock()
	default:
		var p App
		if err := r.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: parent}, &p); err != nil {
			return ctrl.Result{}, err
		}
		if !p.Status.Ready {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
	}
	app.Status.Ready, app.Status.ObservedGeneration = ready, app.Generation
	return ctrl.Result{}, r.Status().Update(ctx, &app)
}

// domainScenario creates three Apps at one instant: one on its own, a
// parent and its child.
func domainScenario(fromMemory bool) clustertest.Scenario {
	return func(t testing.TB, c *clustertest.Cluster) {
		mgr := c.NewManager(ctrl.Options{})
		err := ctrl.NewControllerManagedBy(mgr).For(&App{}).
			WithOptions(controller.Options{NewQueue: clustertest.NewQueue[reconcile.Request](c)}).
			Complete(&domainReconciler{Client: mgr.GetClient(), fromMemory: fromMemory})
		if err != nil {
			t.Fatal(err)
		}
		c.Start(mgr)
		c.Advance(time.Second)
		for _, a := range []*App{newApp("blog", "blog:1", 1), newApp("base", "base:1", 1), newApp("shop", "shop:1", 1)} {
			if a.Name == "shop" {
				a.Labels = map[string]string{"parent": "base"}
			}
			if err := c.Client().Create(t.Context(), a); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// everyAppReady: once the scenario is over, every App is ready (within a
// minute).
var everyAppReady = clustertest.Property{Name: "every app ready", AtEnd: func(c *clustertest.Cluster) error {
	var not []string
	err := c.RunUntil(func() bool {
		not = nil
		var apps AppList
		if err := c.Client().List(context.Background(), &apps); err != nil {
			not = []string{err.Error()}
			return false
		}
		for _, a := range apps.Items {
			if !a.Status.Ready {
				not = append(not, fmt.Sprintf("%s (observed generation %d)", a.Name, a.Status.ObservedGeneration))
			}
		}
		return len(not) == 0
	}, time.Minute)
	if err != nil {
		return fmt.Errorf("not ready: %s", strings.Join(not, ", "))
	}
	return nil
}}

func domainOptions(t *testing.T) clustertest.ExploreOptions {
	return clustertest.ExploreOptions{
		Options:    clustertest.Options{Scheme: appScheme(t), Types: []client.Object{&App{}}},
		Seeds:      40,
		Properties: []clustertest.Property{everyAppReady},
	}
}

func TestExploreFindsAnOperatorThatAssumesTheQueueOrder(t *testing.T) {
	opts := domainOptions(t)
	opts.ExpectViolation = true
	opts.Logf = t.Logf
	v := clustertest.Explore(t, opts, domainScenario(true))
	if v == nil {
		t.FailNow()
	}
	if v.Property != everyAppReady.Name || !strings.Contains(v.Schedule.String(), "pick") {
		t.Fatalf("violated %q (%s) with %q", v.Property, v.Message, v.Schedule)
	}
	r := domainOptions(t)
	r.Replay, r.ExpectViolation, r.Logf = v.Replay, true, func(string, ...any) {}
	if w := clustertest.Explore(t, r, domainScenario(true)); w == nil || w.Message != v.Message {
		t.Errorf("the replay of %s did not break %q again", v.Replay, v.Property)
	}
	// In the canonical order (first in, first out) the parent goes first.
	r.Replay, r.ExpectViolation = "seed=1", false
	clustertest.Explore(t, r, domainScenario(true))
}

func TestExploreFindsNothingInAnOperatorThatWaitsForTheParent(t *testing.T) {
	opts := domainOptions(t)
	if raceEnabled {
		opts.Seeds = 20
	}
	picks, n := benchesWith("queue app hands out default/shop before default/base")
	opts.Properties = append(opts.Properties, picks)
	clustertest.Explore(t, opts, domainScenario(false))
	if n.Load() == 0 {
		t.Errorf("no bench of %d handed the child out before its parent", opts.Seeds)
	}
}

// roundsReconciler notes the order of its reconciles and requeues every
// App a minute later, three times: at +1m and +2m the requeues of all
// Apps fall due at one instant.
type roundsReconciler struct {
	now   func() time.Duration
	mu    sync.Mutex
	order []string
	count map[string]int
}

func (r *roundsReconciler) Reconcile(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == nil {
		r.count = map[string]int{}
	}
	r.count[req.Name]++
	r.order = append(r.order, fmt.Sprintf("%v %s", r.now().Truncate(time.Second), req.Name))
	if r.count[req.Name] >= 3 {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: time.Minute}, nil
}

// rounds runs the rounds on a bench and returns the reconciles' order,
// the trace and the schedule.
func rounds(t *testing.T, opts clustertest.Options) (order, trace []string, schedule string) {
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		mgr := c.NewManager(ctrl.Options{})
		r := &roundsReconciler{now: c.Now}
		err := ctrl.NewControllerManagedBy(mgr).For(&App{}).
			WithOptions(controller.Options{NewQueue: clustertest.NewQueue[reconcile.Request](c)}).
			Complete(r)
		if err != nil {
			t.Fatal(err)
		}
		c.Start(mgr)
		c.Advance(time.Second)
		for _, name := range []string{"a", "b", "c", "d"} {
			if err := c.Client().Create(t.Context(), newApp(name, "x:1", 1)); err != nil {
				t.Fatal(err)
			}
		}
		c.Advance(3 * time.Minute)
		r.mu.Lock()
		order = slices.Clone(r.order)
		r.mu.Unlock()
		trace, schedule = c.Trace(), c.Schedule().String()
	})
	return order, trace, schedule
}

// TestNewQueueReordersRequeuesAndReplays: requeues that fall due at one
// instant are handed out first in, first out in the canonical order, in
// an order of the seed's under Interleave, and the same seed (or its
// schedule) gives the same order and trace.
func TestNewQueueReordersRequeuesAndReplays(t *testing.T) {
	canonical, _, none := rounds(t, benchOptions(t, 1))
	if none != "" {
		t.Fatalf("the canonical order made choices: %s", none)
	}
	reordered := false
	for seed := uint64(1); seed <= 6 && !reordered; seed++ {
		opts := benchOptions(t, seed)
		opts.Interleave = true
		order, trace, schedule := rounds(t, opts)
		again, trace2, schedule2 := rounds(t, opts)
		if !slices.Equal(order, again) || !slices.Equal(trace, trace2) || schedule != schedule2 {
			t.Fatalf("seed %d: two runs differ: %v / %v, %q / %q", seed, order, again, schedule, schedule2)
		}
		replay := benchOptions(t, seed)
		replay.Schedule = schedule
		if order3, trace3, _ := rounds(t, replay); !slices.Equal(order, order3) || !slices.Equal(trace, trace3) {
			t.Fatalf("seed %d: the replay of %q differs: %v / %v", seed, schedule, order, order3)
		}
		// A round at +1m or +2m in another order than the canonical one.
		if strings.Contains(schedule, "pick") && !slices.Equal(order, canonical) {
			for i := range order {
				if strings.HasPrefix(order[i], "1m") || strings.HasPrefix(order[i], "2m") {
					reordered = reordered || order[i] != canonical[i]
				}
			}
			if reordered {
				t.Logf("seed %d (%s): %v; canonical %v", seed, schedule, order, canonical)
			}
		}
	}
	if !reordered {
		t.Errorf("no seed of 6 handed the requeues of one instant out in another order than %v", canonical)
	}
}
