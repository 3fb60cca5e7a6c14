// Command controllerruntime is an operator that runs ctrlkit's Deployment
// and ReplicaSet controllers in a controller-runtime Manager: the whole
// program is the few lines below. Run it against a cluster whose
// kube-controller-manager does not run its own deployment and replicaset
// controllers (--controllers=*,-deployment-controller,-replicaset-controller), with the
// kubeconfig controller-runtime finds (--kubeconfig, $KUBECONFIG,
// in-cluster, ~/.kube/config).
package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime"
)

func main() {
	workers := flag.Int("workers", 5, "concurrent syncs of each controller")
	namespace := flag.String("namespace", "", "the only namespace to manage and cache (default: all)")
	metrics := flag.String("metrics-bind-address", ":8080", "address of /metrics (0 disables it)")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("ctrlkit")

	o := ctrl.Options{Metrics: metricsserver.Options{BindAddress: *metrics}}
	if *namespace != "" {
		o.Cache.DefaultNamespaces = map[string]cache.Config{*namespace: {}}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), o)
	if err == nil {
		err = controllerruntime.Add(mgr, controllerruntime.Options{Workers: *workers, Namespace: *namespace})
	}
	if err == nil {
		err = mgr.Start(ctrl.SetupSignalHandler())
	}
	if err != nil {
		log.Error(err, "operator failed")
		os.Exit(1)
	}
}
