package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig finds the cluster as a controller in a pod does: the
// kubeconfig at path if given, else the kubeconfig files listed in
// $KUBECONFIG, else the in-cluster configuration (the ServiceAccount token
// and CA mounted in the pod, and KUBERNETES_SERVICE_HOST/PORT).
func restConfig(path string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	if path == "" {
		env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
		if env == "" {
			cfg, err := rest.InClusterConfig()
			if errors.Is(err, rest.ErrNotInCluster) {
				return nil, errors.New("no --kubeconfig, no $KUBECONFIG, and not in a cluster (KUBERNETES_SERVICE_HOST and _PORT are unset)")
			}
			if err != nil {
				return nil, fmt.Errorf("in-cluster configuration: %w", err)
			}
			return cfg, nil
		}
		rules.Precedence = filepath.SplitList(env)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// usage prints the flags, and how they relate to kube-controller-manager's.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintf(w, `ctrlkit-controller runs ctrlkit's Deployment and ReplicaSet controllers in place of
kube-controller-manager's (start that one with --controllers=*,-deployment-controller,-replicaset-controller).

kube-controller-manager flags honoured, with the same meaning and defaults:
  --kubeconfig --concurrent-deployment-syncs --concurrent-replicaset-syncs --kube-api-qps
  --kube-api-burst --kube-api-content-type --profiling --leader-elect
  --leader-elect-resource-namespace --leader-elect-resource-name --leader-elect-lease-duration
  --leader-elect-renew-deadline --leader-elect-retry-period --bind-address --secure-port
  --authentication-kubeconfig --authorization-kubeconfig --tls-cert-file --tls-private-key-file
  --authorization-always-allow-paths and klog's flags (-v, --vmodule, ...)
kube-controller-manager flags with no meaning here (not accepted): --controllers, --master, the flags
  of other controllers (--concurrent-*-syncs but these two, --node-*, --cluster-*, --service-*,
  --root-ca-file, --use-service-account-credentials, --feature-gates), --leader-migrator-*

Flags:
`)
	fs.PrintDefaults()
}
