package clustertest_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
