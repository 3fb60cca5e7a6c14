package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// App is a custom resource of the tests: a user's operator turns each App
// into a Deployment.
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AppSpec   `json:"spec,omitempty"`
	Status            AppStatus `json:"status,omitempty"`
}

type AppSpec struct {
	Image    string `json:"image"`
	Replicas int32  `json:"replicas"`
}

type AppStatus struct {
	Ready              bool  `json:"ready,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

type AppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []App `json:"items"`
}

func (a *App) DeepCopyObject() runtime.Object {
	out := *a
	a.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (l *AppList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]App, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*App)
	}
	return &out
}

var appGV = schema.GroupVersion{Group: "apps.example.com", Version: "v1"}

func appScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypes(appGV, &App{}, &AppList{})
	metav1.AddToGroupVersion(s, appGV)
	return s
}

// appReconciler is a user's controller, written as for a real cluster: it
// creates the App's Deployment, reports whether it is rolled out, and
// checks again every hour.
type appReconciler struct {
	client.Client
	now func() time.Duration // virtual time, for the tests' records

	mu     sync.Mutex
	visits map[string][]time.Duration // reconciles per App
	errs   int                        // reconciles that returned an error
}

func (r *appReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	r.mu.Lock()
	if r.visits == nil {
		r.visits = map[string][]time.Duration{}
	}
	r.visits[req.Name] = append(r.visits[req.Name], r.now())
	r.mu.Unlock()
	defer func() {
		if err != nil {
			r.mu.Lock()
			r.errs++
			r.mu.Unlock()
		}
	}()

	var app App
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		labels := map[string]string{"app": app.Name}
		replicas := app.Spec.Replicas
		d.Spec.Replicas = &replicas
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		d.Spec.Template.Labels = labels
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: app.Spec.Image}}
		return controllerutil.SetControllerReference(&app, d, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	st := d.Status
	ready := d.Generation <= st.ObservedGeneration && st.UpdatedReplicas == app.Spec.Replicas &&
		st.AvailableReplicas == app.Spec.Replicas && st.Replicas == app.Spec.Replicas
	if app.Status.Ready != ready || app.Status.ObservedGeneration != app.Generation {
		app.Status.Ready, app.Status.ObservedGeneration = ready, app.Generation
		if err := r.Status().Update(ctx, &app); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: time.Hour}, nil
}

func (r *appReconciler) visitsOf(name string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.visits[name])
}

// startOperator runs the user's operator in a Manager on c.
func startOperator(t *testing.T, c *clustertest.Cluster) *appReconciler {
	mgr := c.NewManager(ctrl.Options{})
	r := &appReconciler{Client: mgr.GetClient(), now: c.Now}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&App{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Complete(r)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(mgr)
	return r
}

func newApp(name, image string, replicas int32) *App {
	return &App{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: AppSpec{Image: image, Replicas: replicas}}
}

// appsReady reports whether every App is ready at its generation.
func appsReady(t *testing.T, c *clustertest.Cluster, want int) func() bool {
	return func() bool {
		var l AppList
		if err := c.Client().List(t.Context(), &l); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range l.Items {
			if a.Status.Ready && a.Status.ObservedGeneration == a.Generation {
				n++
			}
		}
		return n == want
	}
}

func benchOptions(t *testing.T, seed uint64) clustertest.Options {
	return clustertest.Options{Seed: seed, Scheme: appScheme(t), Types: []client.Object{&App{}}}
}

func TestOperatorRollsOutThroughBuiltinControllers(t *testing.T) {
	clustertest.Test(t, benchOptions(t, 1), func(t *testing.T, c *clustertest.Cluster) {
		startOperator(t, c)
		for i := range 3 {
			if err := c.Client().Create(t.Context(), newApp(fmt.Sprintf("app-%d", i), "nginx:1.27", 4)); err != nil {
				t.Fatal(err)
			}
		}
		c.MustRunUntil("3 apps ready", appsReady(t, c, 3), time.Hour)
		created := c.Now()

		var app App
		if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "app-1"}, &app); err != nil {
			t.Fatal(err)
		}
		app.Spec.Image = "nginx:1.28"
		if err := c.Client().Update(t.Context(), &app); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("app-1 updated", appsReady(t, c, 3), time.Hour)
		var d appsv1.Deployment
		if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "app-1"}, &d); err != nil {
			t.Fatal(err)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
			t.Errorf("app-1's Deployment runs %s, want nginx:1.28", img)
		}
		var rss appsv1.ReplicaSetList
		if err := c.Client().List(t.Context(), &rss, client.InNamespace("default"), client.MatchingLabels{"app": "app-1"}); err != nil {
			t.Fatal(err)
		}
		if len(rss.Items) != 2 {
			t.Errorf("app-1 has %d ReplicaSets, want 2 (old and new)", len(rss.Items))
		}
		if err := c.Check(); err != nil {
			t.Error(err)
		}
		// The default kubelet makes a pod ready 2s after it is created:
		// 4 replicas one at a time (maxSurge 25% = 1, maxUnavailable 25% = 1)
		// take a few virtual seconds, not minutes.
		if created <= 0 || created > time.Minute || c.Now()-created > time.Minute {
			t.Errorf("ready at +%v, updated at +%v: want a few virtual seconds each", created, c.Now())
		}
	})
}

func TestRequeueAfterAnHourIsAnHourOfVirtualTime(t *testing.T) {
	clustertest.Test(t, benchOptions(t, 1), func(t *testing.T, c *clustertest.Cluster) {
		r := startOperator(t, c)
		if err := c.Client().Create(t.Context(), newApp("web", "nginx", 2)); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("web ready", appsReady(t, c, 1), time.Hour)
		before := r.visitsOf("web")
		last := before[len(before)-1]
		t0 := time.Now() // virtual: the bubble's clock

		c.Advance(time.Hour - time.Second)
		if got := r.visitsOf("web"); len(got) != len(before) {
			t.Fatalf("reconciled at %v before the hour was up (last at %v)", got[len(before):], last)
		}
		c.Advance(2 * time.Hour)
		got := r.visitsOf("web")[len(before):]
		if want := []time.Duration{last + time.Hour, last + 2*time.Hour}; !slices.Equal(got, want) {
			t.Errorf("reconciled again at %v, want %v (every hour after the last reconcile)", got, want)
		}
		if elapsed := time.Since(t0); elapsed != 3*time.Hour-time.Second {
			t.Errorf("virtual time moved %v, want 2h59m59s", elapsed)
		}
	})
}

func TestDeletingTheOwnerCollectsEverything(t *testing.T) {
	for _, gc := range []bool{true, false} {
		t.Run(fmt.Sprintf("gc=%v", gc), func(t *testing.T) {
			opts := benchOptions(t, 1)
			if !gc {
				opts.Disable = clustertest.GarbageCollector
			}
			clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
				startOperator(t, c)
				app := newApp("web", "nginx", 3)
				if err := c.Client().Create(t.Context(), app); err != nil {
					t.Fatal(err)
				}
				c.MustRunUntil("web ready", appsReady(t, c, 1), time.Hour)
				if err := c.Client().Delete(t.Context(), app); err != nil {
					t.Fatal(err)
				}
				count := func() (deps, rss, pods int) {
					var dl appsv1.DeploymentList
					var rl appsv1.ReplicaSetList
					var pl corev1.PodList
					for _, l := range []client.ObjectList{&dl, &rl, &pl} {
						if err := c.Client().List(t.Context(), l, client.InNamespace("default")); err != nil {
							t.Fatal(err)
						}
					}
					return len(dl.Items), len(rl.Items), len(pl.Items)
				}
				err := c.RunUntil(func() bool { d, r, p := count(); return d+r+p == 0 }, time.Hour)
				d, r, p := count()
				if gc && err != nil {
					t.Fatalf("after deleting the App: %v (%d Deployments, %d ReplicaSets, %d pods left)", err, d, r, p)
				}
				if !gc && (!errors.Is(err, clustertest.ErrTimeLimit) || d != 1 || r != 1 || p != 3) {
					t.Fatalf("without the garbage collector: %v, %d Deployments, %d ReplicaSets, %d pods; want them all left", err, d, r, p)
				}
			})
		})
	}
}

func TestHandDrivenDeploymentStatus(t *testing.T) {
	opts := benchOptions(t, 1)
	opts.Disable = clustertest.DeploymentController | clustertest.ReplicaSetController
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		startOperator(t, c)
		if err := c.Client().Create(t.Context(), newApp("web", "nginx", 2)); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute)
		var rss appsv1.ReplicaSetList
		if err := c.Client().List(t.Context(), &rss); err != nil {
			t.Fatal(err)
		}
		if len(rss.Items) != 0 || appsReady(t, c, 1)() {
			t.Fatalf("without the Deployment controller: %d ReplicaSets, App ready=%v; want none, false", len(rss.Items), appsReady(t, c, 1)())
		}
		var d appsv1.Deployment
		if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "web"}, &d); err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
		if err := c.Client().Status().Update(t.Context(), &d); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("web ready on the hand-written status", appsReady(t, c, 1), time.Second)
	})
}

func TestFaultsReachTheUsersController(t *testing.T) {
	clustertest.Test(t, benchOptions(t, 3), func(t *testing.T, c *clustertest.Cluster) {
		r := startOperator(t, c)
		c.SetFaults(memcluster.Faults{Rules: []memcluster.FaultRule{
			{Verb: "create", Resource: "deployments", Rate: 1, Reason: metav1.StatusReasonConflict},
			{Verb: "update/status", Resource: "apps", Rate: 0.5, Reason: metav1.StatusReasonServiceUnavailable},
		}})
		if err := c.Client().Create(t.Context(), newApp("web", "nginx", 2)); err != nil {
			t.Fatal(err)
		}
		c.Advance(10 * time.Second)
		var dl appsv1.DeploymentList
		if err := c.Client().List(t.Context(), &dl); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		errs := r.errs
		r.mu.Unlock()
		if len(dl.Items) != 0 || errs == 0 {
			t.Fatalf("every create refused: %d Deployments, %d reconcile errors; want none and some", len(dl.Items), errs)
		}
		c.SetFaults(memcluster.Faults{Rules: []memcluster.FaultRule{
			{Verb: "update/status", Resource: "apps", Rate: 0.5, Reason: metav1.StatusReasonServiceUnavailable},
			{Resource: "replicasets", Rate: 0.3, Reason: metav1.StatusReasonConflict},
		}})
		c.MustRunUntil("web ready despite the faults", appsReady(t, c, 1), time.Hour)
		if err := c.Check(); err != nil {
			t.Error(err)
		}
	})
}

func TestRunUntilNamesWhatIsStuck(t *testing.T) {
	opts := benchOptions(t, 1)
	opts.Kubelet.Model = memcluster.ImageModel(map[string]memcluster.PodBehavior{
		"nginx:broken": {Failure: memcluster.PodBadImage},
	}, nil)
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		startOperator(t, c)
		if err := c.Client().Create(t.Context(), newApp("web", "nginx:broken", 2)); err != nil {
			t.Fatal(err)
		}
		err := c.RunUntil(appsReady(t, c, 1), 10*time.Minute)
		if !errors.Is(err, clustertest.ErrTimeLimit) {
			t.Fatalf("RunUntil = %v, want ErrTimeLimit", err)
		}
		if c.Now() != 10*time.Minute {
			t.Errorf("gave up at +%v, want +10m0s", c.Now())
		}
		msg := err.Error()
		for _, want := range []string{"deployment default/web: 2 desired, 2 updated, 0 available", "ImagePullBackOff"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error does not say %q:\n%s", want, msg)
			}
		}
	})
}

// scenario runs an operator with 5 Apps on pods of random readiness, with
// conflicts and unavailable errors, and returns the trace.
func scenario(t *testing.T, seed uint64) []string {
	var trace []string
	opts := benchOptions(t, seed)
	opts.Kubelet.Model = memcluster.RandomModel(memcluster.DefaultPodBehavior(), time.Second, 20*time.Second)
	opts.Faults = memcluster.Faults{Rules: []memcluster.FaultRule{
		{Verb: "update", Rate: 0.2, Reason: metav1.StatusReasonConflict},
		{Verb: "create", Resource: "pods", Rate: 0.1, Reason: metav1.StatusReasonServiceUnavailable},
	}}
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		startOperator(t, c)
		// Create the Apps once the operator's controller runs: client-go
		// hands objects that exist before then to the controller in the
		// random order of a map (see the package doc).
		c.Advance(time.Second)
		for i := range 5 {
			if err := c.Client().Create(t.Context(), newApp(fmt.Sprintf("app-%d", i), "nginx:1", 5)); err != nil {
				t.Fatal(err)
			}
		}
		c.MustRunUntil("apps ready", appsReady(t, c, 5), time.Hour)
		for i := range 5 {
			err := retryOnConflict(func() error {
				var app App
				if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: fmt.Sprintf("app-%d", i)}, &app); err != nil {
					return err
				}
				app.Spec.Image = "nginx:2"
				return c.Client().Update(t.Context(), &app)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		c.MustRunUntil("apps updated", appsReady(t, c, 5), time.Hour)
		if err := c.Check(); err != nil {
			t.Error(err)
		}
		trace = c.Trace()
	})
	return trace
}

func retryOnConflict(f func() error) error {
	for {
		if err := f(); !apierrors.IsConflict(err) {
			return err
		}
	}
}

func TestSameSeedSameTrace(t *testing.T) {
	first := scenario(t, 7)
	if len(first) < 100 {
		t.Fatalf("a trace of %d lines: want the whole rollout", len(first))
	}
	for run := range 2 {
		if again := scenario(t, 7); !slices.Equal(first, again) {
			i := 0
			for i < min(len(first), len(again)) && first[i] == again[i] {
				i++
			}
			from := max(0, i-5)
			t.Fatalf("run %d: the trace differs at line %d of %d/%d:\nfirst:\n%s\nagain:\n%s", run+2, i, len(first), len(again),
				strings.Join(first[from:min(i+5, len(first))], "\n"), strings.Join(again[from:min(i+5, len(again))], "\n"))
		}
	}
	if other := scenario(t, 8); slices.Equal(first, other) {
		t.Error("seeds 7 and 8 gave the same trace: the seed does not reach the kubelet's model or the faults")
	}
}

// TestHundredDeployments rolls out 100 Deployments × 10 replicas through a
// user's controller and logs the wall time (the goal: under 1 s
// without -race).
func TestHundredDeployments(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 20
	}
	wall := time.Now()
	var virtual time.Duration
	clustertest.Test(t, benchOptions(t, 1), func(t *testing.T, c *clustertest.Cluster) {
		startOperator(t, c)
		for i := range n {
			if err := c.Client().Create(t.Context(), newApp(fmt.Sprintf("app-%03d", i), "nginx:1", 10)); err != nil {
				t.Fatal(err)
			}
		}
		c.MustRunUntil("every app ready", appsReady(t, c, n), time.Hour)
		virtual = c.Now()
		var pods corev1.PodList
		if err := c.Client().List(t.Context(), &pods); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 10*n {
			t.Errorf("%d pods, want %d", len(pods.Items), 10*n)
		}
	})
	t.Logf("%d Deployments × 10 replicas rolled out in %v virtual, %v wall", n, virtual, time.Since(wall).Round(time.Millisecond))
}

// TestStart logs how long a bench takes to start, settle with its
// built-in controllers running, and stop (the goal: start under
// 50 ms). Time inside the bubble is virtual, so it is measured outside.
func TestStart(t *testing.T) {
	const runs = 10
	wall := time.Now()
	for range runs {
		clustertest.Test(t, clustertest.Options{}, func(t *testing.T, c *clustertest.Cluster) {
			c.Settle()
			if c.Now() != 0 {
				t.Errorf("settling an empty cluster took %v of virtual time", c.Now())
			}
		})
	}
	t.Logf("a bench starts, settles and stops in %v on average (%d runs, wall time)", (time.Since(wall) / runs).Round(time.Microsecond), runs)
}
