package envtestshape

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/controllerruntime/envtest"
)

// The suite as envtest suites are written; only the environment lines
// and RunSpecs name the bench: envtest.RunSpecs runs it in virtual time,
// CTRLKIT_WALL_CLOCK=1 on the wall clock, and CTRLKIT_ENVTEST=1 with
// CTRLKIT_WALL_CLOCK=1 on envtest instead (binaries in KUBEBUILDER_ASSETS),
// for comparison.

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   interface{ Stop() error }
	cfg       *rest.Config
	k8sClient client.Client
	onEnvtest = os.Getenv("CTRLKIT_ENVTEST") != ""
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	envtest.RunSpecs(t, "Controller Suite") // virtual time; CTRLKIT_WALL_CLOCK=1 for the wall clock
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())
	// Up to 10 s, as kubebuilder's generated controller tests wait: the
	// suite passes on the bench within Eventually's default second on a
	// quiet machine, but a test of ours may not depend on wall-clock speed
	// (with -race beside CPU-burning processes a rollout spec took up to
	// 2.9 s); how fast the specs pass is measured by operators/hack/measure.sh.
	SetDefaultEventuallyTimeout(10 * time.Second)

	Expect(AddToScheme(scheme.Scheme)).To(Succeed())

	By("bootstrapping test environment")
	crds := []string{filepath.Join("config", "crd", "bases")}
	var err error
	if onEnvtest {
		env := &crenvtest.Environment{CRDDirectoryPaths: crds, ErrorIfCRDPathMissing: true}
		testEnv = env
		cfg, err = env.Start()
	} else {
		env := &envtest.Environment{CRDDirectoryPaths: crds, ErrorIfCRDPathMissing: true,
			Controllers: clustertest.AllControllers} // the specs that need them are skipped on envtest
		testEnv = env
		cfg, err = env.Start()
	}
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient).NotTo(BeNil())

	k8sManager, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&SiteReconciler{Client: k8sManager.GetClient(), Scheme: k8sManager.GetScheme()}).SetupWithManager(k8sManager)).To(Succeed())

	go func() {
		defer GinkgoRecover()
		Expect(k8sManager.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	By("tearing down the test environment")
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})
