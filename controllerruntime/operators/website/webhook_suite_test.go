package website

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
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
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/ctrlkit/ctrlkit/controllerruntime/envtest"
)

// The suite as kubebuilder scaffolds a webhook suite; the environment
// lines pick envtest (CTRLKIT_ENVTEST=1, binaries in KUBEBUILDER_ASSETS)
// or the bench.

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   interface{ Stop() error }
	cfg       *rest.Config
	k8sClient client.Client
	onEnvtest = os.Getenv("CTRLKIT_ENVTEST") != ""
)

func TestWebhooks(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Website Webhook Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())
	SetDefaultEventuallyTimeout(10 * time.Second)
	Expect(AddToScheme(scheme.Scheme)).To(Succeed())

	By("bootstrapping test environment")
	crds := []string{filepath.Join("config", "crd", "bases")}
	hooks := crenvtest.WebhookInstallOptions{Paths: []string{filepath.Join("config", "webhook")}}
	var install *crenvtest.WebhookInstallOptions
	var err error
	if onEnvtest {
		env := &crenvtest.Environment{CRDDirectoryPaths: crds, ErrorIfCRDPathMissing: true, WebhookInstallOptions: hooks}
		testEnv, install = env, &env.WebhookInstallOptions
		cfg, err = env.Start()
	} else {
		env := &envtest.Environment{CRDDirectoryPaths: crds, ErrorIfCRDPathMissing: true, WebhookInstallOptions: hooks}
		testEnv, install = env, &env.WebhookInstallOptions
		cfg, err = env.Start()
	}
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())

	// start webhook server using Manager
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme.Scheme,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    install.LocalServingHost,
			Port:    install.LocalServingPort,
			CertDir: install.LocalServingCertDir,
		}),
		LeaderElection: false,
		Metrics:        metricsserver.Options{BindAddress: "0"},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(SetupWebhooks(mgr)).To(Succeed())
	Expect((&WebsiteReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)).To(Succeed())

	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()

	// wait for the webhook server to get ready
	dialer := &net.Dialer{Timeout: time.Second}
	addrPort := fmt.Sprintf("%s:%d", install.LocalServingHost, install.LocalServingPort)
	Eventually(func() error {
		conn, err := tls.DialWithDialer(dialer, "tcp", addrPort, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		return conn.Close()
	}).Should(Succeed())
})

var _ = AfterSuite(func() {
	By("tearing down the test environment")
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})
