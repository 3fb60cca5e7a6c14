package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The configuration is found as a controller in a pod finds it:
// --kubeconfig, else $KUBECONFIG, else the in-cluster configuration.
func TestRestConfig(t *testing.T) {
	flagFile, envFile := writeKubeconfig(t, "https://flag.example:6443"), writeKubeconfig(t, "https://env.example:6443")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")

	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, envFile)
	for _, c := range []struct{ flag, want string }{{flagFile, "https://flag.example:6443"}, {"", "https://env.example:6443"}} {
		cfg, err := restConfig(c.flag)
		if err != nil {
			t.Fatalf("restConfig(%q): %v", c.flag, err)
		}
		if cfg.Host != c.want {
			t.Errorf("restConfig(%q).Host = %q; want %q", c.flag, cfg.Host, c.want)
		}
	}
	// $KUBECONFIG may list several files.
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, filepath.Join(t.TempDir(), "missing")+string(os.PathListSeparator)+envFile)
	if cfg, err := restConfig(""); err != nil || cfg.Host != "https://env.example:6443" {
		t.Errorf("restConfig with a list in $KUBECONFIG = %v, %v", cfg, err)
	}

	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, "")
	if _, err := restConfig(""); err == nil || !strings.Contains(err.Error(), "not in a cluster") {
		t.Errorf("restConfig without any configuration: err = %v; want one saying it is not in a cluster", err)
	}
}

// kube-controller-manager's worker flags, and the older --workers that
// sets both unless they are given.
func TestWorkerFlags(t *testing.T) {
	for _, c := range []struct {
		args   []string
		d, rsw int
	}{
		{nil, 5, 5},
		{[]string{"--concurrent-deployment-syncs=3", "--concurrent-replicaset-syncs=7"}, 3, 7},
		{[]string{"--workers=2"}, 2, 2},
		{[]string{"--workers=2", "--concurrent-replicaset-syncs=9"}, 2, 9},
	} {
		o, err := parseFlags("ctrlkit-controller", c.args)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", c.args, err)
		}
		if o.deploymentSyncs != c.d || o.replicaSetSyncs != c.rsw {
			t.Errorf("parseFlags(%q): %d deployment and %d replicaset workers; want %d and %d", c.args, o.deploymentSyncs, o.replicaSetSyncs, c.d, c.rsw)
		}
	}
	o, err := parseFlags("ctrlkit-controller", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/healthz", "/readyz", "/livez"}; strings.Join(o.secure.alwaysAllow, ",") != strings.Join(want, ",") || o.secure.port != 0 {
		t.Errorf("defaults: always-allowed %q, secure port %d; want %q and 0", o.secure.alwaysAllow, o.secure.port, want)
	}
}
