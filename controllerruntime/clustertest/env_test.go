package clustertest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// The Environment's own behaviour; envtestshape runs a whole suite on it.

func TestEnvironmentStartsServesAndStops(t *testing.T) {
	env := &clustertest.Environment{Scheme: appScheme(t), Types: []client.Object{&App{}},
		BinaryAssetsDirectory: "/nonexistent", ControlPlaneStartTimeout: 1} // envtest's fields are accepted and ignored
	if err := env.Stop(); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	if env.Config == nil || cfg.Host != env.Config.Host {
		t.Errorf("Start returned %v and set Config %v: want the same cluster", cfg, env.Config)
	}
	if _, err := env.Start(); err == nil {
		t.Error("a second Start: no error")
	}
	c, err := client.New(cfg, client.Options{Scheme: appScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, newApp("web", "nginx", 1)); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	var apps AppList
	if err := c.List(ctx, &apps); err != nil || len(apps.Items) != 1 {
		t.Errorf("list: %v, %d apps; want 1", err, len(apps.Items))
	}
	if d := env.Describe(); !strings.Contains(d, "app default/web: no status (never reconciled?)") {
		t.Errorf("Describe does not name the App nobody reconciled:\n%s", d)
	}
	if tr := strings.Join(env.Trace(), "\n"); !strings.Contains(tr, `request POST apps default/web from environment "clustertest.test": 201`) {
		t.Errorf("the trace does not have the create:\n%s", tr)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestEnvironmentRefusesWhatItCannotDo(t *testing.T) {
	for name, env := range map[string]*clustertest.Environment{
		"missing CRD path":                {CRDDirectoryPaths: []string{"testdata/no-such-dir"}, ErrorIfCRDPathMissing: true},
		"missing CRD path (install opts)": {CRDInstallOptions: clustertest.CRDInstallOptions{Paths: []string{"testdata/no-such-dir"}, ErrorIfPathMissing: true}},
		"existing cluster":                {UseExistingCluster: ptr.To(true)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := env.Start(); err == nil {
				_ = env.Stop()
				t.Fatal("Start: no error")
			} else {
				t.Log(err)
			}
		})
	}
	// A missing path without ErrorIfCRDPathMissing is no error, as in envtest.
	env := &clustertest.Environment{CRDDirectoryPaths: []string{"testdata/no-such-dir"}}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
}

// An envtest suite with webhooks starts a Manager's webhook server on the
// host, port and certificate its environment prepared, and waits until it
// answers TLS: the bench prepares them as envtest does.
func TestEnvironmentPreparesWebhookServing(t *testing.T) {
	env := &clustertest.Environment{Scheme: appScheme(t), Types: []client.Object{&App{}},
		WebhookInstallOptions: clustertest.WebhookInstallOptions{Paths: []string{filepath.Join("testdata", "webhook")}}}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	w := env.WebhookInstallOptions
	if w.LocalServingHost == "" || w.LocalServingPort == 0 || len(w.LocalServingCAData) == 0 {
		t.Fatalf("webhook serving not prepared: host %q port %d, %d bytes of CA", w.LocalServingHost, w.LocalServingPort, len(w.LocalServingCAData))
	}
	if len(w.ValidatingWebhooks) != 1 || w.ValidatingWebhooks[0].Name != "validating-webhook-configuration" {
		t.Errorf("validating webhooks read from Paths: %v", w.ValidatingWebhooks)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(w.LocalServingCertDir, f)); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: appScheme(t), Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir})})
	if err != nil {
		t.Fatal(err)
	}
	// A Manager serves webhooks once one is registered.
	mgr.GetWebhookServer().Register("/validate-example-ctrlkit-dev-v1-app", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.LocalServingCAData)
	addr := net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort))
	var dialErr error
	for range 500 { // the server starts with the Manager; a real suite polls the same way
		var conn *tls.Conn
		if conn, dialErr = tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: w.LocalServingHost}); dialErr == nil {
			_ = conn.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if dialErr != nil {
		t.Errorf("the webhook server does not answer TLS with the prepared certificate: %v", dialErr)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("manager: %v", err)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.LocalServingCertDir); !os.IsNotExist(err) {
		t.Errorf("Stop left the certificate directory %s: %v", w.LocalServingCertDir, err)
	}
	// A webhook path that does not exist fails Start, as in envtest.
	bad := &clustertest.Environment{WebhookInstallOptions: clustertest.WebhookInstallOptions{Paths: []string{filepath.Join("testdata", "no-such-dir")}}}
	if _, err := bad.Start(); err == nil {
		_ = bad.Stop()
		t.Error("Start with a missing webhook path: no error")
	} else if !strings.Contains(err.Error(), "webhooks") {
		t.Errorf("Start with a missing webhook path: %v, want an error that names the webhooks", err)
	}
}

// An Environment installs the CRDs of its CRDDirectoryPaths, as envtest
// does: their kinds are served with their schemas, by any client.
func TestEnvironmentInstallsCRDs(t *testing.T) {
	env := &clustertest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("envtestshape", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	site := func(name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion("demo.ctrlkit.dev/v1")
		u.SetKind("Site")
		u.SetNamespace("default")
		u.SetName(name)
		return u
	}
	// The schema requires spec.image and gives replicas a minimum of 0.
	for name, spec := range map[string]map[string]any{
		"no-image":          {"replicas": int64(1)},
		"negative-replicas": {"image": "nginx:1.27", "replicas": int64(-1)},
	} {
		err := c.Create(t.Context(), site(name, spec))
		if !apierrors.IsInvalid(err) {
			t.Errorf("create of %s: %v, want 422 Invalid from the CRD's schema", name, err)
		}
	}
	good := site("shop", map[string]any{"image": "nginx:1.27", "replicas": int64(2), "unknown": "pruned"})
	if err := c.Create(t.Context(), good); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(good.Object, "spec", "unknown"); found {
		t.Errorf("spec.unknown kept: the CRD's structural schema prunes it: %v", good.Object["spec"])
	}
}
