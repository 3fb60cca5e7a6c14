package envtest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ctrlkit/ctrlkit/controllerruntime/envtest"
)

// TestHelperSuite is the Ginkgo suite the tests of RunSpecs run in a child
// process (a process runs one suite, and some of these end it): the
// specs of the case named by ENVTEST_HELPER_CASE, shaped as envtest suites
// are (BeforeSuite starts an Environment and a Manager, AfterSuite stops
// them). Without it the test skips.
func TestHelperSuite(t *testing.T) {
	kase := os.Getenv("ENVTEST_HELPER_CASE")
	if kase == "" {
		t.Skip("run by the tests of RunSpecs, in a child process")
	}
	cases := map[string]func(){
		"requeue":    requeueSpecs,
		"eventually": failingEventuallySpecs,
		"listener":   listenerSpecs,
		"lock":       lockSpecs,
		"webhooks":   webhookSpecs,
		"leftover":   leftoverSpecs,
		"interrupt":  interruptSpecs,
		"wallclock":  wallClockSpecs,
	}
	register, ok := cases[kase]
	if !ok {
		t.Fatalf("no helper case %q", kase)
	}
	register()
	gomega.RegisterFailHandler(ginkgo.Fail)
	envtest.RunSpecs(t, "Helper Suite "+kase)
	fmt.Printf("after the suite: metricsserver.DefaultBindAddress %q\n", metricsserver.DefaultBindAddress)
}

// suite is what BeforeSuite starts, as an envtest suite keeps it.
type suite struct {
	env       *envtest.Environment
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
}

// kubebuilderShaped registers BeforeSuite and AfterSuite as kubebuilder's
// scaffolding writes them: an Environment, a client, a Manager with opts
// and the reconciler setup adds, started in a goroutine; AfterSuite
// cancels it and stops the Environment (and writes the Environment's
// trace to ENVTEST_HELPER_TRACE, if set).
func kubebuilderShaped(opts ctrl.Options, setup func(ctrl.Manager) error) *suite {
	s := &suite{}
	ginkgo.BeforeSuite(func() {
		logf.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.env = &envtest.Environment{}
		cfg, err := s.env.Start()
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		s.k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		opts.Scheme = scheme.Scheme
		mgr, err := ctrl.NewManager(cfg, opts)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(setup(mgr)).To(gomega.Succeed())
		go func() {
			defer ginkgo.GinkgoRecover()
			gomega.Expect(mgr.Start(s.ctx)).To(gomega.Succeed())
		}()
	})
	ginkgo.AfterSuite(func() {
		s.cancel()
		if path := os.Getenv("ENVTEST_HELPER_TRACE"); path != "" {
			gomega.Expect(os.WriteFile(path, []byte(strings.Join(s.env.Trace(), "\n")), 0o600)).To(gomega.Succeed())
		}
		gomega.Expect(s.env.Stop()).To(gomega.Succeed())
	})
	return s
}

// stamper counts the reconciles of each ConfigMap in a ConfigMap of its
// own ("<name>-count", which it does not watch), and comes back to each an
// hour later.
func stamper(mgr ctrl.Manager) error {
	c := mgr.GetClient()
	counted := predicate.NewPredicateFuncs(func(o client.Object) bool { return !strings.HasSuffix(o.GetName(), "-count") })
	return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}, builder.WithPredicates(counted)).Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		count := configMap(req.Name + "-count")
		if err := c.Get(ctx, client.ObjectKeyFromObject(count), count); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		var n int
		if s := count.Data["reconciles"]; s != "" {
			if _, err := fmt.Sscan(s, &n); err != nil {
				return reconcile.Result{}, err
			}
		}
		count.Data = map[string]string{"reconciles": fmt.Sprint(n + 1), "at": time.Now().UTC().Format(time.RFC3339)}
		if count.ResourceVersion == "" {
			return reconcile.Result{RequeueAfter: time.Hour}, c.Create(ctx, count)
		}
		return reconcile.Result{RequeueAfter: time.Hour}, c.Update(ctx, count)
	}))
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// reconciles reads the count stamper wrote for ConfigMap name.
func reconciles(s *suite, name string) func() (string, error) {
	return func() (string, error) {
		cm := configMap(name + "-count")
		err := s.k8sClient.Get(s.ctx, client.ObjectKeyFromObject(cm), cm)
		return cm.Data["reconciles"], err
	}
}

// requeueSpecs wait hours of virtual time: a requeue an hour later, a
// sleep, a Consistently.
func requeueSpecs() {
	s := kubebuilderShaped(ctrl.Options{}, stamper) // the default metrics address: RunSpecs makes it "0"
	ginkgo.Describe("a reconciler that requeues after an hour", func() {
		ginkgo.It("runs in virtual time", func() {
			gomega.Expect(time.Now().Year()).To(gomega.Equal(2000))
		})
		ginkgo.It("reconciles three times in two hours", func() {
			gomega.Expect(s.k8sClient.Create(s.ctx, configMap("hourly"))).To(gomega.Succeed())
			// Polls half a minute off the hourly reconciles: with polls
			// from the create on, a poll and the third reconcile fell a few
			// milliseconds apart, and the minute it was seen in depended on
			// their order (2h41m of virtual time here, 2h40m in a CI run).
			time.Sleep(30 * time.Second)
			gomega.Eventually(reconciles(s, "hourly")).WithTimeout(3 * time.Hour).WithPolling(time.Minute).Should(gomega.Equal("3"))
		})
		ginkgo.It("sleeps half an hour, and nothing happens for ten minutes", func() {
			time.Sleep(30 * time.Minute)
			gomega.Consistently(reconciles(s, "hourly")).WithTimeout(10 * time.Minute).WithPolling(time.Minute).Should(gomega.Equal("3"))
		})
	})
}

// failingEventuallySpecs has a spec that fails after polling the cluster
// for two minutes.
func failingEventuallySpecs() {
	s := kubebuilderShaped(ctrl.Options{}, stamper)
	ginkgo.It("waits two minutes for what never comes", func() {
		gomega.Expect(s.k8sClient.Create(s.ctx, configMap("once"))).To(gomega.Succeed())
		gomega.Eventually(reconciles(s, "once")).WithTimeout(2 * time.Minute).Should(gomega.Equal("2"))
	})
}

// listenerSpecs start a Manager whose metrics server listens on a socket.
func listenerSpecs() {
	s := kubebuilderShaped(ctrl.Options{Metrics: metricsserver.Options{BindAddress: "127.0.0.1:0"}}, stamper)
	ginkgo.It("waits for a reconcile", func() {
		gomega.Expect(s.k8sClient.Create(s.ctx, configMap("listened"))).To(gomega.Succeed())
		gomega.Eventually(reconciles(s, "listened")).Should(gomega.Equal("1"))
	})
}

// lockSpecs wait for time (as for a request's turn) while holding a lock
// another goroutine waits for.
func lockSpecs() {
	ginkgo.It("sleeps under a lock", func() {
		var mu sync.Mutex
		mu.Lock()
		go waitForLock(&mu)
		time.Sleep(time.Millisecond) // never ends: the lock's waiter is not durably blocked
		mu.Unlock()
	})
}

func waitForLock(mu *sync.Mutex) {
	mu.Lock()
	defer mu.Unlock()
}

// webhookSpecs start an Environment with webhooks.
func webhookSpecs() {
	ginkgo.BeforeSuite(func() {
		env := &envtest.Environment{WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join("testdata", "webhook")}}}
		_, err := env.Start()
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	})
	ginkgo.It("is never reached", func() {})
}

// leftoverSpecs leave a goroutine running after the suite.
func leftoverSpecs() {
	ginkgo.BeforeSuite(func() {
		go func() {
			for {
				time.Sleep(time.Second) // never stopped
			}
		}()
	})
	ginkgo.It("passes", func() {})
}

// never is a channel of no bubble: a goroutine of the suite waiting on it
// is not durably blocked, and the suite's clock stops.
var never = make(chan struct{})

// interruptSpecs interrupt their own process, in a spec that waits for ever.
func interruptSpecs() {
	ginkgo.It("is interrupted", func() {
		p, err := os.FindProcess(os.Getpid())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(p.Signal(syscall.SIGTERM)).To(gomega.Succeed())
		<-never
	})
}

// wallClockSpecs run on the wall clock.
func wallClockSpecs() {
	s := kubebuilderShaped(ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}}, stamper)
	ginkgo.It("runs on the wall clock", func() {
		gomega.Expect(time.Now().Year()).NotTo(gomega.Equal(2000))
		gomega.Expect(s.k8sClient.Create(s.ctx, configMap("wall"))).To(gomega.Succeed())
		gomega.Eventually(reconciles(s, "wall")).WithTimeout(time.Minute).Should(gomega.Equal("1"))
	})
}
