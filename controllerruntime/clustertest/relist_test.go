package clustertest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// auditReconciler keeps an audit record, a ConfigMap "<app>-gen-<n>", of
// every generation of each App's spec. The mistake (fromEvents) is to
// audit the generations its watch events show: an informer that lists
// again after an expired watch shows the difference, not every update,
// and a generation is never audited. The fix audits every generation
// from the one its status says it audited last to the App's own.
type auditReconciler struct {
	client.Client
	fromEvents bool

	mu   sync.Mutex
	seen map[types.NamespacedName][]int64 // generations seen in events, not yet audited
}

func (r *auditReconciler) saw(obj client.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[types.NamespacedName][]int64{}
	}
	key := client.ObjectKeyFromObject(obj)
	r.seen[key] = append(r.seen[key], obj.GetGeneration())
}

func (r *auditReconciler) take(key types.NamespacedName) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	gens := r.seen[key]
	delete(r.seen, key)
	return gens
}

func (r *auditReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app App
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var gens []int64
	if r.fromEvents {
		gens = r.take(req.NamespacedName)
	} else {
		for g := app.Status.ObservedGeneration + 1; g <= app.Generation; g++ {
			gens = append(gens, g)
		}
	}
	for _, g := range gens {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: fmt.Sprintf("%s-gen-%d", app.Name, g)},
			Data: map[string]string{"app": app.Name}}
		if err := r.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, err
		}
	}
	if !r.fromEvents && app.Status.ObservedGeneration != app.Generation {
		app.Status.ObservedGeneration = app.Generation
		if err := r.Status().Update(ctx, &app); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// auditScenario changes an App's image five times, 300 ms apart.
func auditScenario(fromEvents bool) clustertest.Scenario {
	return func(t testing.TB, c *clustertest.Cluster) {
		mgr := c.NewManager(ctrl.Options{})
		r := &auditReconciler{Client: mgr.GetClient(), fromEvents: fromEvents}
		b := ctrl.NewControllerManagedBy(mgr).Named("audit")
		if fromEvents {
			b = b.Watches(&App{}, handler.Funcs{
				CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
					r.saw(e.Object)
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
				},
				UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
					if e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() {
						r.saw(e.ObjectNew)
						q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)})
					}
				},
			})
		} else {
			b = b.For(&App{})
		}
		if err := b.Complete(r); err != nil {
			t.Fatal(err)
		}
		c.Start(mgr)
		c.Advance(time.Second)
		if err := c.Client().Create(t.Context(), newApp("shop", "shop:1", 1)); err != nil {
			t.Fatal(err)
		}
		for i := 2; i <= 6; i++ {
			c.Advance(300 * time.Millisecond)
			err := retryOnConflict(func() error {
				var app App
				if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "shop"}, &app); err != nil {
					return err
				}
				app.Spec.Image = fmt.Sprintf("shop:%d", i)
				return c.Client().Update(t.Context(), &app)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// everyGenerationAudited: once the scenario is over, every generation of
// every App has its audit record (within a minute).
var everyGenerationAudited = clustertest.Property{Name: "every generation audited", AtEnd: func(c *clustertest.Cluster) error {
	var missing []string
	err := c.RunUntil(func() bool {
		missing = nil
		var apps AppList
		if err := c.Client().List(context.Background(), &apps); err != nil {
			missing = []string{err.Error()}
			return false
		}
		for _, app := range apps.Items {
			for g := int64(1); g <= app.Generation; g++ {
				var cm corev1.ConfigMap
				key := client.ObjectKey{Namespace: app.Namespace, Name: fmt.Sprintf("%s-gen-%d", app.Name, g)}
				if err := c.Client().Get(context.Background(), key, &cm); err != nil {
					missing = append(missing, fmt.Sprintf("%s generation %d", app.Name, g))
				}
			}
		}
		return len(missing) == 0
	}, time.Minute)
	if err != nil {
		return fmt.Errorf("no audit record of %s", strings.Join(missing, ", "))
	}
	return nil
}}

func auditOptions(t *testing.T) clustertest.ExploreOptions {
	return clustertest.ExploreOptions{
		Options:    clustertest.Options{Scheme: appScheme(t), Types: []client.Object{&App{}}, Perturb: clustertest.PerturbRelist},
		Seeds:      60,
		Properties: []clustertest.Property{everyGenerationAudited},
	}
}

// TestExploreFindsAnEdgeTriggeredOperator: an operator that acts on what
// each watch event shows loses what a relist after an expired watch
// collapses; PerturbRelist finds it, and a closed watch (resumed without
// loss) does not.
func TestExploreFindsAnEdgeTriggeredOperator(t *testing.T) {
	opts := auditOptions(t)
	opts.ExpectViolation = true
	opts.Logf = t.Logf
	v := clustertest.Explore(t, opts, auditScenario(true))
	if v == nil {
		t.FailNow()
	}
	if v.Property != everyGenerationAudited.Name {
		t.Fatalf("violated %q (%s)", v.Property, v.Message)
	}
	if !strings.Contains(v.Schedule.String(), "relist") {
		t.Errorf("shrunk to %q, without a relist", v.Schedule)
	}
	// The replay breaks it again.
	r := auditOptions(t)
	r.Replay, r.ExpectViolation, r.Logf = v.Replay, true, func(string, ...any) {}
	if w := clustertest.Explore(t, r, auditScenario(true)); w == nil || w.Message != v.Message {
		t.Errorf("the replay of %s did not break %q again", v.Replay, v.Property)
	}
}

func TestExploreFindsNothingInTheLevelTriggeredOperator(t *testing.T) {
	opts := auditOptions(t)
	if raceEnabled {
		opts.Seeds = 25
	}
	opts.Options.Perturb = clustertest.PerturbRelist | clustertest.PerturbWatchClose
	relists, n := benchesWith("expired (410)")
	opts.Properties = append(opts.Properties, relists)
	clustertest.Explore(t, opts, auditScenario(false))
	if n.Load() == 0 {
		t.Errorf("no bench of %d expired a watch", opts.Seeds)
	}
	// Closed watches resume without loss: the edge-triggered operator
	// survives them.
	opts.Seeds /= 2
	opts.Options.Perturb = clustertest.PerturbWatchClose
	closes, n := benchesWith("closed (explored)")
	opts.Properties = []clustertest.Property{everyGenerationAudited, closes}
	clustertest.Explore(t, opts, auditScenario(true))
	if n.Load() == 0 {
		t.Errorf("no bench of %d closed a watch", opts.Seeds)
	}
}

// benchesWith is a property that holds always and counts the benches
// whose trace says text: that a "finds nothing" exploration did perturb.
func benchesWith(text string) (clustertest.Property, *atomic.Int32) {
	n := &atomic.Int32{}
	return clustertest.Property{Name: "counts " + text, AtEnd: func(c *clustertest.Cluster) error {
		if strings.Contains(strings.Join(c.Trace(), "\n"), text) {
			n.Add(1)
		}
		return nil
	}}, n
}
