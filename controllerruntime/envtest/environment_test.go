package envtest_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/envtest"
)

var siteCRDs = []string{filepath.Join("testdata", "crd")}

func site(name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("demo.ctrlkit.dev/v1")
	u.SetKind("Site")
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

// start starts env and stops it when the test ends.
func start(t *testing.T, env *envtest.Environment) client.Client {
	t.Helper()
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStartsServesAndStops(t *testing.T) {
	env := &envtest.Environment{CRDDirectoryPaths: siteCRDs, ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: "/nonexistent", ControlPlaneStartTimeout: 1} // envtest's fields are accepted and ignored
	if err := env.Stop(); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	if d := env.Describe(); d != "" {
		t.Errorf("Describe before Start = %q, want \"\"", d)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	if env.Config == nil || cfg.Host != env.Config.Host {
		t.Errorf("Start returned %v and set Config %v: want the same cluster", cfg, env.Config)
	}
	if env.Scheme == nil {
		t.Error("Start left Scheme nil; envtest sets it to client-go's")
	}
	if _, err := env.Start(); err == nil {
		t.Error("a second Start: no error")
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.Create(ctx, site("web", map[string]any{"image": "nginx"})); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if d := env.Describe(); !strings.Contains(d, "site default/web: no status (never reconciled?)") {
		t.Errorf("Describe does not name the Site nobody reconciled:\n%s", d)
	}
	if tr := strings.Join(env.Trace(), "\n"); !strings.Contains(tr, `request POST sites default/web from config "envtest.test": 201`) {
		t.Errorf("the trace does not have the create:\n%s", tr)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := env.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if tr := env.Trace(); len(tr) == 0 {
		t.Error("no trace after Stop: what happened should stay readable")
	}
}

func TestRefusesWhatItCannotDo(t *testing.T) {
	withFlags := &envtest.Environment{}
	withFlags.ControlPlane.GetAPIServer().Configure().Set("feature-gates", "SomeGate=true")
	for name, env := range map[string]*envtest.Environment{
		"missing CRD path":                {CRDDirectoryPaths: []string{"testdata/no-such-dir"}, ErrorIfCRDPathMissing: true},
		"missing CRD path (install opts)": {CRDInstallOptions: envtest.CRDInstallOptions{Paths: []string{"testdata/no-such-dir"}, ErrorIfPathMissing: true}},
		"existing cluster":                {UseExistingCluster: ptr.To(true)},
		"kube-apiserver flags":            withFlags,
		"missing webhook path":            {WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join("testdata", "no-such-dir")}}},
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
	if _, err := (&envtest.Environment{}).AddUser(envtest.User{Name: "alice"}, nil); err == nil {
		t.Error("AddUser: no error, but the bench authenticates no one")
	}
	// A missing path without ErrorIfCRDPathMissing is no error, as in envtest.
	start(t, &envtest.Environment{CRDDirectoryPaths: []string{"testdata/no-such-dir"}})
}

// An envtest suite with webhooks starts a Manager's webhook server on the
// host, port and certificate its environment prepared: the bench prepares
// them as envtest does, and removes the certificate at Stop.
func TestPreparesWebhookServing(t *testing.T) {
	env := &envtest.Environment{CRDDirectoryPaths: siteCRDs,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join("testdata", "webhook")}}}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	w := env.WebhookInstallOptions
	if w.LocalServingHost == "" || w.LocalServingPort == 0 || len(w.LocalServingCAData) == 0 {
		t.Fatalf("webhook serving not prepared: host %q port %d, %d bytes of CA", w.LocalServingHost, w.LocalServingPort, len(w.LocalServingCAData))
	}
	if len(w.ValidatingWebhooks) != 1 || w.ValidatingWebhooks[0].Name != "validating-webhook-configuration" {
		t.Errorf("validating webhooks read from Paths: %v", w.ValidatingWebhooks)
	}
	// The serving certificate is one a client trusting the CA accepts for
	// the host, and the port is free for the webhook server.
	cert, err := tls.LoadX509KeyPair(filepath.Join(w.LocalServingCertDir, "tls.crt"), filepath.Join(w.LocalServingCertDir, "tls.key"))
	if err != nil {
		t.Fatalf("serving certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.LocalServingCAData)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: w.LocalServingHost}); err != nil {
		t.Errorf("the serving certificate does not verify for %s with the CA: %v", w.LocalServingHost, err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort)))
	if err != nil {
		t.Errorf("the webhook port is not free: %v", err)
	} else {
		_ = l.Close()
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.LocalServingCertDir); !os.IsNotExist(err) {
		t.Errorf("Stop left the certificate directory %s: %v", w.LocalServingCertDir, err)
	}
}

// An Environment installs the CRDs of its CRDDirectoryPaths, as envtest
// does: their kinds are served with their schemas, by any client.
func TestInstallsCRDs(t *testing.T) {
	c := start(t, &envtest.Environment{CRDDirectoryPaths: siteCRDs, ErrorIfCRDPathMissing: true})
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
