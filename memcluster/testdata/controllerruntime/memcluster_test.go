// This file is a smoke test of controller-runtime on memcluster's REST API,
// for the controllerruntime/ nested module (it needs
// sigs.k8s.io/controller-runtime, which the root module may not import;
// the go tool ignores testdata directories). Copy it there as is. It was
// run with controller-runtime v0.25.2 and client-go v0.37.1:
//
//	go test -race ./... # in a module requiring ctrlkit, controller-runtime, client-go
package controllerruntime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctrlkit/ctrlkit/memcluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// WebApp is a custom resource, as kubebuilder would generate it.
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WebAppSpec   `json:"spec,omitempty"`
	Status            WebAppStatus `json:"status,omitempty"`
}

type WebAppSpec struct {
	Image string `json:"image"`
}

type WebAppStatus struct {
	Ready bool `json:"ready"`
}

type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebApp `json:"items"`
}

func (w *WebApp) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (l *WebAppList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]WebApp, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*WebApp)
	}
	return &out
}

// reconciler owns a Deployment per WebApp, marks the WebApp ready, and
// checks again every hour.
type reconciler struct {
	client.Client
	runs *atomic.Int32
}

func (r reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.runs.Add(1)
	var app WebApp
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	l := map[string]string{"app": app.Name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: l}
		d.Spec.Template.Labels = l
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: app.Spec.Image}}
		return controllerutil.SetControllerReference(&app, d, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	if !app.Status.Ready {
		app.Status.Ready = true
		if err := r.Status().Update(ctx, &app); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: time.Hour}, nil
}

// start returns a running manager with the reconciler, on a memcluster
// that stores WebApps, and the number of reconciles so far.
func start(t *testing.T, ctx context.Context) (ctrl.Manager, *atomic.Int32, <-chan error) {
	t.Helper()
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(gv, &WebApp{}, &WebAppList{})
	metav1.AddToGroupVersion(scheme, gv)
	c := memcluster.New(memcluster.Config{Seed: 1})
	memcluster.AddBuiltinKinds(c)
	k, err := memcluster.KindFor(scheme, &WebApp{}, memcluster.KindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	memcluster.NewResource(c, k)
	cfg := &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}}
	skip := true // every test names its controller "webapp"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	runs := &atomic.Int32{}
	if err := ctrl.NewControllerManagedBy(mgr).For(&WebApp{}).Owns(&appsv1.Deployment{}).Complete(reconciler{mgr.GetClient(), runs}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	return mgr, runs, done
}

// The manager's cache, client (protobuf for Deployments, JSON for
// WebApps), RESTMapper and controller work unchanged; owner references
// garbage-collect the Deployment.
func TestManager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		mgr, _, done := start(t, ctx)
		cl := mgr.GetClient()
		app := &WebApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: WebAppSpec{Image: "nginx:1"}}
		if err := cl.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		var d appsv1.Deployment
		for i := 0; cl.Get(ctx, client.ObjectKeyFromObject(app), &d) != nil || !ready(ctx, cl, app); i++ {
			if i == 60 {
				t.Fatal("no ready WebApp with its Deployment after a virtual minute")
			}
			time.Sleep(time.Second) // virtual: the controller's work queue runs on timers
		}
		if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Kind != "WebApp" {
			t.Errorf("deployment owners = %v; want the WebApp", d.OwnerReferences)
		}
		patch := client.MergeFrom(app.DeepCopyObject().(*WebApp))
		app.Spec.Image = "nginx:2"
		if err := cl.Patch(ctx, app, patch); err != nil || app.Generation != 2 {
			t.Fatalf("patch: generation %d, %v; want 2", app.Generation, err)
		}
		if err := cl.Delete(ctx, app); err != nil {
			t.Fatal(err)
		}
		var left appsv1.DeploymentList
		if err := mgr.GetAPIReader().List(ctx, &left); err != nil || len(left.Items) != 0 {
			t.Errorf("deployments after deleting the owner: %d, %v; want none", len(left.Items), err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// RequeueAfter: time.Hour runs the reconciler again an hour of virtual time later.
func TestHourlyRequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		mgr, runs, done := start(t, ctx)
		app := &WebApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: WebAppSpec{Image: "nginx:1"}}
		if err := mgr.GetClient().Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		for i := 0; !ready(ctx, mgr.GetClient(), app); i++ {
			if i == 60 {
				t.Fatal("no ready WebApp after a virtual minute")
			}
			time.Sleep(time.Second)
		}
		time.Sleep(time.Minute)
		before := runs.Load()
		time.Sleep(time.Hour)
		synctest.Wait()
		if after := runs.Load(); after != before+1 {
			t.Errorf("%d reconciles in the hour after the first ones; want 1", after-before)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func ready(ctx context.Context, cl client.Client, app *WebApp) bool {
	var got WebApp
	return cl.Get(ctx, client.ObjectKeyFromObject(app), &got) == nil && got.Status.Ready
}
