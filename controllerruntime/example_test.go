package controllerruntime_test

import (
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime"
	"github.com/ctrlkit/ctrlkit/examples/webapp"
)

// Registering both controllers with a Manager is one call. The Manager
// here points at no API server (nothing is started); in a program it
// comes from ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{}) and
// runs with mgr.Start(ctx).
func ExampleAdd() {
	skip := true // controller names are unique per process; examples may run repeatedly
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Metrics:        metricsserver.Options{BindAddress: "0"},
		MapperProvider: staticMapper, // no discovery: there is no server to ask
		Controller:     config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		panic(err)
	}
	err = controllerruntime.Add(mgr, controllerruntime.Options{Workers: 5})
	fmt.Println("registered:", err)
	// Options are checked.
	err = controllerruntime.AddReplicaSetController(mgr, controllerruntime.Options{Workers: -1})
	fmt.Println(err)
	// Output:
	// registered: <nil>
	// controllerruntime: Options.Workers is negative (-1)
}

// A custom resource whose type implements deployment.Workload (here the
// WebApp of package examples/webapp) gets the Deployment controller's
// rollouts from a controller of its own; the ReplicaSet controller manages
// its ReplicaSets. The kind must be in the manager's scheme.
func ExampleAddWorkloadController() {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := webapp.AddToScheme(scheme); err != nil {
		panic(err)
	}
	skip := true
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:         scheme,
		Metrics:        metricsserver.Options{BindAddress: "0"},
		MapperProvider: staticMapper,
		Controller:     config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		panic(err)
	}
	err = controllerruntime.AddWorkloadController(mgr, webapp.Kind,
		func() *webapp.List { return &webapp.List{} },
		func(l *webapp.List) []webapp.WebApp { return l.Items },
		controllerruntime.Options{})
	fmt.Println("webapp-controller:", err)
	err = controllerruntime.AddReplicaSetController(mgr, controllerruntime.Options{})
	fmt.Println("replicaset-controller:", err)
	// Output:
	// webapp-controller: <nil>
	// replicaset-controller: <nil>
}

func staticMapper(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	m.Add(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	m.Add(webapp.Kind, meta.RESTScopeNamespace)
	return m, nil
}
