package clustertest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// childReconciler gives each App a Deployment, found by label in the
// Manager's cache. With generateName (the mistake) a reconcile that runs
// before the cache has seen its previous create makes a second one; with
// the App's name (the fix) the second create is refused.
type childReconciler struct {
	client.Client
	generateName bool
}

func (r *childReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app App
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var ds appsv1.DeploymentList
	if err := r.List(ctx, &ds, client.InNamespace(app.Namespace), client.MatchingLabels{"app": app.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if len(ds.Items) == 0 {
		labels := map[string]string{"app": app.Name}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Labels: labels}}
		if r.generateName {
			d.GenerateName = app.Name + "-"
		} else {
			d.Name = app.Name
		}
		replicas := app.Spec.Replicas
		d.Spec = appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: app.Spec.Image}}}}}
		if err := controllerutil.SetControllerReference(&app, d, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, d); client.IgnoreAlreadyExists(err) != nil {
			return ctrl.Result{}, err
		}
		ds.Items = append(ds.Items, *d)
	}
	d := ds.Items[0]
	ready := d.Status.AvailableReplicas == app.Spec.Replicas && d.Status.UpdatedReplicas == app.Spec.Replicas
	if app.Status.Ready != ready || app.Status.ObservedGeneration != app.Generation {
		app.Status.Ready, app.Status.ObservedGeneration = ready, app.Generation
		if err := r.Status().Update(ctx, &app); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// childScenario creates two Apps and waits until both are ready.
func childScenario(generateName bool) clustertest.Scenario {
	return func(t testing.TB, c *clustertest.Cluster) {
		mgr := c.NewManager(ctrl.Options{})
		r := &childReconciler{Client: mgr.GetClient(), generateName: generateName}
		if err := ctrl.NewControllerManagedBy(mgr).For(&App{}).Owns(&appsv1.Deployment{}).Complete(r); err != nil {
			t.Fatal(err)
		}
		c.Start(mgr)
		c.Advance(time.Second)
		for i := range 2 {
			if err := c.Client().Create(t.Context(), newApp(fmt.Sprintf("app-%d", i), "nginx:1", 2)); err != nil {
				t.Fatal(err)
			}
		}
		c.MustRunUntil("apps ready", func() bool {
			var l AppList
			if err := c.Client().List(t.Context(), &l); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, a := range l.Items {
				if a.Status.Ready {
					n++
				}
			}
			return n == 2
		}, time.Hour)
	}
}

// oneChildPerApp is the user's property: an App has at most one
// Deployment.
var oneChildPerApp = clustertest.Property{Name: "one deployment per app", Always: func(s *clustertest.State) error {
	owners := map[string][]string{}
	for _, d := range clustertest.ObjectsOf[*appsv1.Deployment](s, "deployments") {
		if ref := metav1.GetControllerOfNoCopy(d); ref != nil && ref.Kind == "App" {
			owners[ref.Name] = append(owners[ref.Name], d.Name)
		}
	}
	for app, ds := range owners {
		if len(ds) > 1 {
			return fmt.Errorf("app default/%s has %d deployments: %s", app, len(ds), strings.Join(ds, ", "))
		}
	}
	return nil
}}

func childOptions(t *testing.T) clustertest.ExploreOptions {
	return clustertest.ExploreOptions{
		Options: clustertest.Options{Scheme: appScheme(t), Types: []client.Object{&App{}}},
		Seeds:   40,
		Properties: []clustertest.Property{oneChildPerApp, clustertest.DeploymentsCheck(), clustertest.NoExtraPods(),
			clustertest.NoLostPods(), clustertest.NoStaleWrites(), clustertest.NoLostUpdates(), clustertest.Converges(time.Hour)},
	}
}

func TestExploreFindsACreateFromAStaleCache(t *testing.T) {
	opts := childOptions(t)
	opts.ExpectViolation = true
	var report string
	opts.Logf = func(format string, args ...any) { report = fmt.Sprintf(format, args...) }
	v := clustertest.Explore(t, opts, childScenario(true))
	if v == nil {
		t.FailNow()
	}
	t.Logf("found:\n%s", report)
	if v.Property != "one deployment per app" {
		t.Fatalf("violated %q (%s), want the one-child property", v.Property, v.Message)
	}
	if len(v.Schedule) == 0 || len(v.Schedule) > 12 {
		t.Errorf("shrunk to %d choices (%q), want 1 to 12", len(v.Schedule), v.Schedule)
	}
	if len(v.Steps) != len(v.Schedule) {
		t.Errorf("%d steps that matter for %d choices", len(v.Steps), len(v.Schedule))
	}
	for _, want := range []string{v.Replay, "the steps that matter", v.Message} {
		if !strings.Contains(report, want) {
			t.Errorf("the report does not say %q:\n%s", want, report)
		}
	}
	// The replay breaks the same property with the same trace, twice.
	var traces [][]string
	for range 2 {
		r := childOptions(t)
		r.Replay, r.ExpectViolation, r.Logf = v.Replay, true, func(string, ...any) {}
		w := clustertest.Explore(t, r, childScenario(true))
		if w == nil {
			t.FailNow()
		}
		if w.Property != v.Property || w.Message != v.Message {
			t.Fatalf("the replay violated %q (%s), want %q (%s)", w.Property, w.Message, v.Property, v.Message)
		}
		traces = append(traces, w.Trace)
	}
	if !slices.Equal(traces[0], traces[1]) || !slices.Equal(traces[0], v.Trace) {
		t.Errorf("replays differ: %s", firstDifference(traces[0], traces[1]))
	}
}

func TestExploreFindsNothingInTheFixedOperator(t *testing.T) {
	opts := childOptions(t)
	opts.Seeds = 20 // the mistake is found within 6 (CLUSTERTEST_SEEDS for more)
	if raceEnabled {
		opts.Seeds = 8
	}
	opts.Options.Perturb = clustertest.AllPerturbations
	clustertest.Explore(t, opts, childScenario(false))
}

// TestExploreThroughput measures seeds per second with one bench at a time
// and with two (CLUSTERTEST_THROUGHPUT=N seeds; skipped otherwise).
func TestExploreThroughput(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CLUSTERTEST_THROUGHPUT"))
	if n <= 0 {
		t.Skip("CLUSTERTEST_THROUGHPUT=<seeds> measures exploration throughput")
	}
	for _, perturb := range []clustertest.Perturbations{0, clustertest.AllPerturbations} {
		for _, parallel := range []int{1, 2} {
			opts := childOptions(t)
			opts.Seeds, opts.Parallel, opts.Options.Perturb = n, parallel, perturb
			load := loadAverage()
			start, cpu := time.Now(), cpuSeconds()
			if v := clustertest.Explore(t, opts, childScenario(false)); v != nil {
				t.Fatal(v.Message)
			}
			d, used := time.Since(start), cpuSeconds()-cpu
			t.Logf("perturb %#x, parallel %d: %d seeds in %v wall, %.1fs CPU: %.1f seeds/s wall, %.1f seeds per CPU-second (load average before: %s, after: %s)",
				perturb, parallel, n, d.Round(time.Millisecond), used, float64(n)/d.Seconds(), float64(n)/used, load, loadAverage())
		}
	}
}

// TestExploreReportsAFailingScenario: a scenario that fails is the
// violation of "scenario", found at the first seed, with nothing to
// shrink (the canonical order fails too); an AtEnd property is checked
// once the scenario has passed.
func TestExploreReportsAFailingScenario(t *testing.T) {
	opts := clustertest.ExploreOptions{Seeds: 3, ExpectViolation: true, Logf: func(string, ...any) {}}
	v := clustertest.Explore(t, opts, func(t testing.TB, c *clustertest.Cluster) {
		c.Advance(time.Second)
		t.Fatalf("the scenario gives up at +%v", c.Now())
		t.Error("not reached")
	})
	if v == nil {
		t.FailNow()
	}
	if v.Property != "scenario" || v.Message != "the scenario gives up at +1s" || v.Seed != 1 || len(v.Schedule) != 0 {
		t.Errorf("got %q %q seed %d schedule %q", v.Property, v.Message, v.Seed, v.Schedule)
	}
	if !strings.Contains(v.Report(), "the canonical order breaks it") {
		t.Errorf("report:\n%s", v.Report())
	}

	opts.Properties = []clustertest.Property{{Name: "no namespace foo", AtEnd: func(c *clustertest.Cluster) error {
		var ns corev1.Namespace
		if err := c.Client().Get(context.Background(), client.ObjectKey{Name: "foo"}, &ns); err == nil {
			return fmt.Errorf("namespace foo exists")
		}
		return nil
	}}}
	v = clustertest.Explore(t, opts, func(t testing.TB, c *clustertest.Cluster) {
		if err := c.Client().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "foo"}}); err != nil {
			t.Fatal(err)
		}
	})
	if v == nil {
		t.FailNow()
	}
	if v.Property != "no namespace foo" || v.Step != 0 {
		t.Errorf("got %q at step %d", v.Property, v.Step)
	}
}

// loadAverage is the machine's load average (1, 5 and 15 minutes), where
// the system tells it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
