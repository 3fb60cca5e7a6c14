package clustertest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// Environment is the bench with the shape of controller-runtime's
// envtest.Environment, on the wall clock: a suite written for envtest
// (Ginkgo's BeforeSuite starting the environment and a Manager,
// Gomega's Eventually polling, AfterSuite stopping it) runs on the bench
// by changing the lines that name its environment:
//
//	var testEnv *clustertest.Environment // was *envtest.Environment
//	...
//	testEnv = &clustertest.Environment{ // was &envtest.Environment{
//		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
//		ErrorIfCRDPathMissing: true,
//	}
//	cfg, err = testEnv.Start()
//
// Unlike envtest, the cluster runs the built-in controllers (Deployment,
// ReplicaSet, garbage collector, kubelet: each can be switched off with
// Disable), so a Deployment your operator creates gets ReplicaSets, pods
// that become ready, and a status. It starts in milliseconds, needs no
// binaries, and serves requests in process. Time is the wall clock: the
// kubelet makes pods ready at once (Kubelet sets other delays), and a
// RequeueAfter of an hour takes an hour. Use [Test] for virtual time.
//
// Start may be called once; Stop ends everything it started.
type Environment struct {
	// Scheme holds the kinds the cluster serves. Nil means client-go's
	// global scheme (k8s.io/client-go/kubernetes/scheme.Scheme), where
	// envtest suites register their own types.
	Scheme *runtime.Scheme

	// CRDDirectoryPaths, CRDs, ErrorIfCRDPathMissing and
	// CRDInstallOptions are envtest's: the custom resource definitions to
	// install. Start installs them through the cluster's API, as
	// [Options.CRDDirectoryPaths] and [Options.CRDs] do, so their kinds
	// are served with their schemas. A path that does not exist fails
	// Start when ErrorIfCRDPathMissing (or
	// CRDInstallOptions.ErrorIfPathMissing) is set, and is skipped
	// otherwise, as in envtest.
	CRDDirectoryPaths     []string
	CRDs                  []*apiextensionsv1.CustomResourceDefinition
	ErrorIfCRDPathMissing bool
	CRDInstallOptions     CRDInstallOptions

	// Types and Kinds are your own kinds served from their Go types, as in
	// [Options].
	Types []client.Object
	Kinds []Kind
	// Disable, Seed, Faults and UntrackedBuiltinWrites are as in
	// [Options].
	Disable                Controllers
	Seed                   uint64
	Faults                 memcluster.Faults
	UntrackedBuiltinWrites bool
	// Kubelet configures the simulated kubelet. A nil Model makes pods
	// start and become ready at once, and deleted pods go a millisecond
	// later: a kubelet's seconds would eat Eventually's default timeout of
	// one second.
	Kubelet memcluster.KubeletConfig

	// WebhookInstallOptions are envtest's: Start installs the webhooks
	// as envtest does. It makes a serving certificate and its CA (in
	// LocalServingCertDir), picks LocalServingHost and a free
	// LocalServingPort, points the clientConfig of every webhook of the
	// configurations in Paths, MutatingWebhooks and ValidatingWebhooks
	// there with the CA, and creates the configurations in the cluster,
	// whose admission then calls them (see docs/admission.md): a suite's
	// Manager whose webhook server listens there gets the AdmissionReviews.
	WebhookInstallOptions WebhookInstallOptions

	// Config is the rest.Config of the cluster, set by Start.
	Config *rest.Config

	// Accepted so that envtest suites compile unchanged, and ignored: the
	// bench has no binaries and no processes.
	BinaryAssetsDirectory        string
	DownloadBinaryAssets         bool
	DownloadBinaryAssetsVersion  string
	DownloadBinaryAssetsIndexURL string
	ControlPlaneStartTimeout     time.Duration
	ControlPlaneStopTimeout      time.Duration
	AttachControlPlaneOutput     bool
	// UseExistingCluster must not be true: the bench is its own cluster.
	UseExistingCluster *bool

	mu sync.Mutex
	c  *Cluster
}

// WebhookInstallOptions are envtest's options for webhooks, as
// [Environment] takes them.
type WebhookInstallOptions = envtest.WebhookInstallOptions

// CRDInstallOptions are envtest's options for installing custom resource
// definitions, as [Environment] takes them.
type CRDInstallOptions struct {
	// Scheme, MaxTime, PollInterval and CleanUpAfterUse are accepted and
	// ignored: the bench installs at once, and goes away at Stop.
	Scheme             *runtime.Scheme
	Paths              []string
	CRDs               []*apiextensionsv1.CustomResourceDefinition
	ErrorIfPathMissing bool
	MaxTime            time.Duration
	PollInterval       time.Duration
	CleanUpAfterUse    bool
}

// Start starts the cluster and its built-in controllers, and returns a
// rest.Config for it (also in e.Config).
func (e *Environment) Start() (*rest.Config, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c != nil {
		return nil, errors.New("clustertest: Environment started twice")
	}
	if e.UseExistingCluster != nil && *e.UseExistingCluster {
		return nil, errors.New("clustertest: an Environment is its own cluster: UseExistingCluster is not supported")
	}
	var paths []string
	mustExist := e.ErrorIfCRDPathMissing || e.CRDInstallOptions.ErrorIfPathMissing
	for _, p := range append(append([]string(nil), e.CRDDirectoryPaths...), e.CRDInstallOptions.Paths...) {
		if _, err := os.Stat(p); err != nil {
			if mustExist {
				return nil, fmt.Errorf("clustertest: CRD path: %w", err)
			}
			continue // as envtest: a missing path is skipped unless asked otherwise
		}
		paths = append(paths, p)
	}
	crds := append(append([]*apiextensionsv1.CustomResourceDefinition(nil), e.CRDs...), e.CRDInstallOptions.CRDs...)
	scheme := e.Scheme
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	kubelet := e.Kubelet
	if kubelet.Model == nil {
		kubelet.Model = memcluster.FixedModel(memcluster.PodBehavior{ShutdownDelay: time.Millisecond})
	}
	c, err := start(nil, Options{Scheme: scheme, Types: e.Types, Kinds: e.Kinds, CRDDirectoryPaths: paths, CRDs: crds, Disable: e.Disable, Kubelet: kubelet,
		Seed: e.Seed, Faults: e.Faults, UntrackedBuiltinWrites: e.UntrackedBuiltinWrites, Concurrent: true}, false)
	if err != nil {
		return nil, err
	}
	e.Config = namedConfig(c.cfg, "environment")
	if err := installWebhooks(&e.WebhookInstallOptions, e.Config); err != nil {
		c.shutdown()
		return nil, err
	}
	e.c = c
	return rest.CopyConfig(e.Config), nil
}

// Stop stops the cluster and everything it runs. It returns the errors of
// what was started with [Environment.Start]'s cluster.
func (e *Environment) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c == nil {
		return nil
	}
	errs := e.c.shutdown()
	if err := e.WebhookInstallOptions.Cleanup(); err != nil {
		errs = append(errs, fmt.Errorf("clustertest: webhooks: %w", err))
	}
	return errors.Join(errs...)
}

// cluster is the started cluster, or nil.
func (e *Environment) cluster() *Cluster {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c
}

// Describe says what is stuck, as [Cluster.RunUntil] does when it gives
// up (without the blocked workers: those are told from a bubble's
// goroutines), for a suite to print when an Eventually fails. It is ""
// before Start.
func (e *Environment) Describe() string {
	c := e.cluster()
	if c == nil {
		return ""
	}
	return c.describe()
}

// Trace is [Cluster.Trace]: what happened, with wall-clock times since
// Start. On the wall clock it differs from run to run.
func (e *Environment) Trace() []string {
	if c := e.cluster(); c != nil {
		return c.Trace()
	}
	return nil
}

// Check is [Cluster.Check].
func (e *Environment) Check() error {
	if c := e.cluster(); c != nil {
		return c.Check()
	}
	return nil
}

// SetFaults is [Cluster.SetFaults].
func (e *Environment) SetFaults(f memcluster.Faults) error {
	if c := e.cluster(); c != nil {
		return c.SetFaults(f)
	}
	return nil
}

// Memcluster is [Cluster.Memcluster], or nil before Start.
func (e *Environment) Memcluster() *memcluster.Cluster {
	if c := e.cluster(); c != nil {
		return c.mc
	}
	return nil
}
