//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ctrlkit/ctrlkit/controllerruntime/crd"
	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/testsupport"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// The side-by-side tests send the same requests to a real kube-apiserver
// v1.37.1 and to memcluster, and compare the answers. They share one
// kube-apiserver (started on first use, stopped by TestMain), so each
// test works in namespaces and on names of its own (see sideNamespace).

var shared struct {
	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the shared kube-apiserver: %v\n", err)
		}
	}
	os.Exit(code)
}

// realAPIServer returns a config for the package's shared kube-apiserver.
func realAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	shared.once.Do(func() {
		dir := binDir(t)
		shared.env = &envtest.Environment{BinaryAssetsDirectory: dir, ControlPlaneStartTimeout: 2 * time.Minute}
		shared.cfg, shared.err = shared.env.Start()
		if shared.err != nil {
			shared.env = nil
		}
	})
	if shared.err != nil {
		t.Fatalf("envtest (binaries from %s; build them with kube/hack/controlplane.sh build): %v", binDir(t), shared.err)
	}
	return rest.CopyConfig(shared.cfg)
}

// memAPIServer returns a config for a new in-memory API server set up as
// the test bench (controllerruntime/clustertest) sets up its own: keep the
// two in step, so that these tests compare what bench users get.
func memAPIServer(t *testing.T) (*rest.Config, *memcluster.Cluster) {
	t.Helper()
	return memAPIServerWithCRDs(t)
}

// memAPIServerWithCRDs is memAPIServer with crds installed, as the bench
// installs Options.CRDs (it serves CustomResourceDefinitions either way).
func memAPIServerWithCRDs(t *testing.T, crds ...*apiextensionsv1.CustomResourceDefinition) (*rest.Config, *memcluster.Cluster) {
	t.Helper()
	builtinTypes := memcluster.LazyTypeConverter(func() managedfields.TypeConverter { return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme) })
	c := memcluster.New(memcluster.Config{Seed: 1, RequireNamespaces: true,
		TypeConverter: memcluster.TypeConverterChain(builtinTypes, managedfields.NewDeducedTypeConverter())})
	if _, err := crd.Bench(t.Context(), c, nil, crds); err != nil {
		t.Fatal(err)
	}
	memcluster.AddBuiltinKinds(c)
	cfg := testsupport.MemclusterConfig(memcluster.NewHandler(c))
	return cfg, c
}

// side is one of the two API servers a side-by-side test talks to.
type side struct {
	name string // "kube-apiserver" or "memcluster"
	cfg  *rest.Config
}

// sides returns the real API server first, then a new memcluster.
func sides(t *testing.T) []side {
	t.Helper()
	mem, _ := memAPIServer(t)
	return []side{{"kube-apiserver", realAPIServer(t)}, {"memcluster", mem}}
}

// sideNamespace returns a namespace name unique to the test (the real
// API server is shared by every test of the package).
func sideNamespace(t *testing.T) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	return strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
}
