// Command webapp runs the WebApp operator (package webapp) in a
// controller-runtime Manager, against the cluster of the kubeconfig
// controller-runtime finds (--kubeconfig, $KUBECONFIG, in-cluster,
// ~/.kube/config). Install the CRD first: kubectl apply -f
// webapp/crd.yaml.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/examples/controllerruntime/webapp"
)

func main() {
	metrics := flag.String("metrics-bind-address", ":8080", "address of /metrics (0 disables it)")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	scheme := runtime.NewScheme()
	err := clientgoscheme.AddToScheme(scheme)
	if err == nil {
		err = webapp.AddToScheme(scheme)
	}
	var mgr ctrl.Manager
	if err == nil {
		mgr, err = ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: *metrics}})
	}
	if err == nil {
		err = (&webapp.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}).SetupWithManager(mgr)
	}
	if err == nil {
		err = mgr.Start(ctrl.SetupSignalHandler())
	}
	if err != nil {
		ctrl.Log.Error(err, "webapp operator failed")
		os.Exit(1)
	}
}
