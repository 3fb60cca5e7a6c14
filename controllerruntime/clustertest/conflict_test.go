package clustertest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// observeReconciler writes the generation it observed into each App's
// status, and reconciles on spec changes only (GenerationChangedPredicate,
// as many operators do). The mistake (dropConflicts) is to take a 409 for
// "someone else will fix it" and return without an error: nobody does,
// since the other writer's change did not change the generation, and the
// status stays behind. The fix returns the error: the controller
// requeues the App, reads it again and writes again.
type observeReconciler struct {
	client.Client
	dropConflicts bool
}

func (r *observeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app App
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if app.Status.ObservedGeneration == app.Generation {
		return ctrl.Result{}, nil
	}
	app.Status.ObservedGeneration = app.Generation
	err := r.Status().Update(ctx, &app)
	if r.dropConflicts && apierrors.IsConflict(err) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// observeScenario creates two Apps and changes their images twice.
func observeScenario(dropConflicts bool) clustertest.Scenario {
	return func(t testing.TB, c *clustertest.Cluster) {
		mgr := c.NewManager(ctrl.Options{})
		err := ctrl.NewControllerManagedBy(mgr).For(&App{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Complete(&observeReconciler{Client: mgr.GetClient(), dropConflicts: dropConflicts})
		if err != nil {
			t.Fatal(err)
		}
		c.Start(mgr)
		c.Advance(time.Second)
		for i := range 2 {
			if err := c.Client().Create(t.Context(), newApp(fmt.Sprintf("app-%d", i), "app:1", 1)); err != nil {
				t.Fatal(err)
			}
		}
		for v := 2; v <= 3; v++ {
			c.Advance(time.Second)
			for i := range 2 {
				err := retryOnConflict(func() error {
					var app App
					if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: fmt.Sprintf("app-%d", i)}, &app); err != nil {
						return err
					}
					app.Spec.Image = fmt.Sprintf("app:%d", v)
					return c.Client().Update(t.Context(), &app)
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// statusObserved: once the scenario is over, every App's status observes
// its generation (within a minute).
var statusObserved = clustertest.Property{Name: "status observes the generation", AtEnd: func(c *clustertest.Cluster) error {
	var behind []string
	err := c.RunUntil(func() bool {
		behind = nil
		var apps AppList
		if err := c.Client().List(context.Background(), &apps); err != nil {
			behind = []string{err.Error()}
			return false
		}
		for _, a := range apps.Items {
			if a.Status.ObservedGeneration != a.Generation {
				behind = append(behind, fmt.Sprintf("%s (generation %d, observed %d)", a.Name, a.Generation, a.Status.ObservedGeneration))
			}
		}
		return len(behind) == 0
	}, time.Minute)
	if err != nil {
		return fmt.Errorf("status behind: %s", strings.Join(behind, ", "))
	}
	return nil
}}

func observeOptions(t *testing.T) clustertest.ExploreOptions {
	return clustertest.ExploreOptions{
		Options:    clustertest.Options{Scheme: appScheme(t), Types: []client.Object{&App{}}, Perturb: clustertest.PerturbConflict},
		Seeds:      40,
		Properties: []clustertest.Property{statusObserved, clustertest.NoStaleWrites(), clustertest.NoLostUpdates()},
	}
}

func TestExploreFindsADroppedConflict(t *testing.T) {
	opts := observeOptions(t)
	opts.ExpectViolation = true
	opts.Logf = t.Logf
	v := clustertest.Explore(t, opts, observeScenario(true))
	if v == nil {
		t.FailNow()
	}
	if v.Property != statusObserved.Name {
		t.Fatalf("violated %q (%s)", v.Property, v.Message)
	}
	if !strings.Contains(v.Schedule.String(), "conflict") || !strings.Contains(strings.Join(v.Trace, "\n"), "409") {
		t.Errorf("shrunk to %q, without a conflict answered 409", v.Schedule)
	}
	r := observeOptions(t)
	r.Replay, r.ExpectViolation, r.Logf = v.Replay, true, func(string, ...any) {}
	if w := clustertest.Explore(t, r, observeScenario(true)); w == nil || w.Message != v.Message {
		t.Errorf("the replay of %s did not break %q again", v.Replay, v.Property)
	}
}

func TestExploreFindsNothingInTheRetryingOperator(t *testing.T) {
	opts := observeOptions(t)
	if raceEnabled {
		opts.Seeds = 20
	}
	conflicts, n := benchesWith("from manager \"clustertest.test\": 409")
	opts.Properties = append(opts.Properties, conflicts)
	clustertest.Explore(t, opts, observeScenario(false))
	if n.Load() == 0 {
		t.Errorf("no bench of %d answered a status update 409", opts.Seeds)
	}
}
