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
  --leader-elect-resource-namespace --leader-elect-lease-duration
  --leader-elect-renew-deadline --leader-elect-retry-period --tls-cert-file --tls-private-key-file
  --authorization-always-allow-paths --authentication-token-webhook-cache-ttl, klog's flags (-v, --vmodule),
  --feature-gates (the gates of these two controllers and client-go's; see below)
Same name, different meaning or default:
  --secure-port (0 by default: off; kube-controller-manager serves 10257), --bind-address (the plain-HTTP
  loopback endpoint; kube-controller-manager's is the IP of the secure port, here --secure-bind-address),
  --leader-elect-resource-name (ctrlkit-controller; the Lease kube-controller-manager holds is its own)
ctrlkit-controller's own: --namespace, --workers, --sync-batch-period, --eager-status, --low-priority-events,
  --events-api, --shutdown-grace, --secure-bind-address, and --shard with --shard-* (N active replicas
  sharing the namespaces by ranges of the hash of their names, over coordination.k8s.io Leases)
kube-controller-manager flags with no meaning here (not accepted): --controllers, --master, the flags
  of other controllers (--concurrent-*-syncs but these two, --node-*, --cluster-*, --service-*,
  --root-ca-file, --use-service-account-credentials), the other controllers' feature gates (unrecognized
  here: kube-controller-manager knows them), --leader-migrator-*,
  --authentication-kubeconfig and --authorization-kubeconfig (the reviews go through --kubeconfig's
  client), --client-ca-file, --requestheader-* (bearer tokens only), --cert-dir (a self-signed
  certificate is kept in memory)

Flags:
`)
	fs.PrintDefaults()
}
