package envtest

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

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// Environment is the bench with the shape of controller-runtime's
// envtest.Environment: a suite written for envtest
// (Ginkgo's BeforeSuite starting the environment and a Manager,
// Gomega's Eventually polling, AfterSuite stopping it) runs on the bench
// by changing its import line.
//
// By default the cluster is what envtest's is: an API server and nothing
// else. No garbage collector, namespace or disruption controller, no
// Deployment or ReplicaSet controller, no scheduler and no kubelet run:
// a Deployment gets no ReplicaSets, a pod stays Pending and unbound, a
// deleted owner leaves its dependents, an object deleted with Foreground
// propagation keeps its foregroundDeletion finalizer, a namespace being
// deleted stays Terminating. Suites written for envtest do that work by
// hand, and the bench leaves it to them. Set Controllers to
// clustertest.AllControllers to run the bench's own (see
// [Environment.Controllers]).
//
// It starts in milliseconds, needs no binaries, and serves requests in
// process. Started in a suite that [RunSpecs] runs, it runs in virtual
// time: a RequeueAfter of an hour takes no wall time, and so do the
// request latencies ([Environment.Latency]) and the kubelet's delays.
// Otherwise time is the wall clock: a RequeueAfter of an hour takes an
// hour.
//
// Start may be called once; Stop ends everything it started.
type Environment struct {
	// Scheme holds the kinds the cluster serves. Nil means client-go's
	// global scheme (k8s.io/client-go/kubernetes/scheme.Scheme), where
	// envtest suites register their own types; Start sets it, as
	// envtest's does.
	Scheme *runtime.Scheme

	// CRDDirectoryPaths, CRDs, ErrorIfCRDPathMissing and
	// CRDInstallOptions are envtest's: the custom resource definitions to
	// install. Start installs them through the cluster's API, so their
	// kinds are served with their schemas (see package
	// controllerruntime/crd). A path that does not exist fails Start when
	// ErrorIfCRDPathMissing (or CRDInstallOptions.ErrorIfPathMissing) is
	// set, and is skipped otherwise, as in envtest. Of CRDInstallOptions,
	// Scheme, MaxTime, PollInterval, CleanUpAfterUse and WebhookOptions
	// are ignored: the bench serves a CRD's kind as soon as it is
	// created, and goes away at Stop.
	CRDDirectoryPaths     []string
	CRDs                  []*apiextensionsv1.CustomResourceDefinition
	ErrorIfCRDPathMissing bool
	CRDInstallOptions     CRDInstallOptions

	// WebhookInstallOptions are envtest's: Start installs the webhooks
	// as envtest does. It makes a serving certificate and its CA (in
	// LocalServingCertDir), picks LocalServingHost and a free
	// LocalServingPort, points the clientConfig of every webhook of the
	// configurations in Paths, MutatingWebhooks and ValidatingWebhooks
	// there with the CA, and creates the configurations in the cluster,
	// whose admission then calls them (see docs/admission.md): a suite's
	// Manager whose webhook server listens there gets the AdmissionReviews.
	WebhookInstallOptions WebhookInstallOptions

	// Config is the rest.Config of the cluster, set by Start. Its
	// transport reaches the bench in process.
	Config *rest.Config
	// KubeConfig stays empty: the bench is reached in process, not at an
	// address a kubeconfig file could name.
	KubeConfig []byte

	// The bench's own options, which envtest does not have.

	// Types and Kinds are your own kinds served from their Go types, as in
	// clustertest.Options.
	Types []client.Object
	Kinds []clustertest.Kind
	// Controllers are the bench's built-in controllers to run: none
	// (the zero value) is envtest's cluster, kube-apiserver alone.
	// clustertest.AllControllers runs them all, as a real cluster's
	// kube-controller-manager, scheduler and kubelets would: ctrlkit's
	// Deployment and ReplicaSet controllers (kube-controller-manager
	// v1.37's behaviour: ReplicaSets, pods, rollouts, status), the garbage
	// collector (owners' dependents deleted in the background, foreground
	// and orphan finalizers honoured), the namespace controller, the
	// disruption controller (PodDisruptionBudget status, evictions), and
	// the kubelet (Nodes registered, pods bound to them, started and made
	// ready, graceful deletions finished). Or pick some, as
	// clustertest.GarbageCollector|clustertest.NamespaceController. The
	// guide (docs/envtest.md in the repository) says which envtest idioms
	// then break.
	Controllers clustertest.Controllers
	// Kubelet configures the simulated kubelet, when Controllers runs it.
	// A nil Model makes pods start and become ready at once, and deleted
	// pods go a millisecond later: a kubelet's seconds would eat
	// Eventually's default timeout of one second.
	Kubelet memcluster.KubeletConfig
	// Latency delays every request as a local kube-apiserver would, so
	// that a suite's test goroutine does not outrun its controllers (see
	// [Latency]). Nil means 1 ms for each read and 2 ms for each write,
	// and a list with no resourceVersion waits for its kind's watch cache
	// until 95 ms after the latest write of another kind, as on envtest;
	// &envtest.Latency{} answers at once. The delays appear in the trace
	// as injected latency.
	Latency *Latency
	// Seed, Faults and UntrackedBuiltinWrites are as in
	// clustertest.Options. Faults come on top of Latency.
	Seed                   uint64
	Faults                 memcluster.Faults
	UntrackedBuiltinWrites bool

	// Accepted so that envtest suites compile unchanged, and ignored: the
	// bench has no binaries and no processes. ControlPlane may not set
	// kube-apiserver flags (Start refuses them).
	ControlPlane                 ControlPlane
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
	s  *clustertest.Server
}

// Start starts the cluster (and the built-in controllers of
// e.Controllers), installs the CRDs and installs the webhooks, as
// envtest's Start does,
// and returns a rest.Config for the cluster (also in e.Config).
//
// What the bench cannot do fails Start with an error that says so:
// UseExistingCluster, kube-apiserver flags set through ControlPlane, and,
// in virtual time (under [RunSpecs]), webhooks: a webhook server listens
// on a real socket, which virtual time cannot wait on.
func (e *Environment) Start() (*rest.Config, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.s != nil {
		return nil, errors.New("envtest: Environment started twice")
	}
	if e.UseExistingCluster != nil && *e.UseExistingCluster {
		return nil, errors.New("envtest: an Environment is its own cluster: UseExistingCluster is not supported")
	}
	if err := checkControlPlane(&e.ControlPlane); err != nil {
		return nil, err
	}
	virtual := bubble.Current() != 0
	if w := &e.WebhookInstallOptions; virtual && (len(w.Paths) > 0 || len(w.MutatingWebhooks) > 0 || len(w.ValidatingWebhooks) > 0) {
		return nil, errWebhooks
	}
	var paths []string
	mustExist := e.ErrorIfCRDPathMissing || e.CRDInstallOptions.ErrorIfPathMissing
	for _, p := range append(append([]string(nil), e.CRDDirectoryPaths...), e.CRDInstallOptions.Paths...) {
		if _, err := os.Stat(p); err != nil {
			if mustExist {
				return nil, fmt.Errorf("envtest: CRD path: %w", err)
			}
			continue // as envtest: a missing path is skipped unless asked otherwise
		}
		paths = append(paths, p)
	}
	crds := append(append([]*apiextensionsv1.CustomResourceDefinition(nil), e.CRDs...), e.CRDInstallOptions.CRDs...)
	if e.Scheme == nil {
		e.Scheme = clientgoscheme.Scheme
	}
	kubelet := e.Kubelet
	if kubelet.Model == nil {
		kubelet.Model = memcluster.FixedModel(memcluster.PodBehavior{ShutdownDelay: time.Millisecond})
	}
	faults, err := e.withLatency(e.Faults)
	if err != nil {
		return nil, err
	}
	// As envtest: the serving certificate, host and port, whether or not
	// the suite has webhook configurations.
	if err := e.WebhookInstallOptions.PrepWithoutInstalling(); err != nil {
		return nil, errors.Join(fmt.Errorf("envtest: webhooks: %w", err), e.WebhookInstallOptions.Cleanup())
	}
	s, err := clustertest.NewServer(clustertest.Options{Scheme: e.Scheme, Types: e.Types, Kinds: e.Kinds, CRDDirectoryPaths: paths, CRDs: crds,
		Disable: clustertest.AllControllers &^ e.Controllers, Kubelet: kubelet, Seed: e.Seed, Faults: faults, UntrackedBuiltinWrites: e.UntrackedBuiltinWrites})
	if err != nil {
		return nil, errors.Join(err, e.WebhookInstallOptions.Cleanup())
	}
	e.s = s
	e.Config = s.Config()
	if err := installWebhooks(&e.WebhookInstallOptions, e.Config); err != nil {
		e.s = nil
		return nil, errors.Join(err, s.Stop(), e.WebhookInstallOptions.Cleanup())
	}
	return rest.CopyConfig(e.Config), nil
}

// checkControlPlane refuses kube-apiserver flags: the bench has no
// kube-apiserver process to pass them to.
func checkControlPlane(cp *ControlPlane) error {
	if cp.APIServer == nil {
		return nil
	}
	flags := append(cp.APIServer.Configure().AsStrings(nil), cp.APIServer.Args...)
	if len(flags) > 0 {
		return fmt.Errorf("envtest: the bench runs no kube-apiserver process: ControlPlane.APIServer flags %q are not supported", flags)
	}
	return nil
}

// Stop stops the cluster and everything it runs. It returns the errors of
// the cluster's own components.
func (e *Environment) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.s == nil {
		return nil
	}
	errs := []error{e.s.Stop()}
	if err := e.WebhookInstallOptions.Cleanup(); err != nil {
		errs = append(errs, fmt.Errorf("envtest: webhooks: %w", err))
	}
	return errors.Join(errs...)
}

// server is the started bench, or nil.
func (e *Environment) server() *clustertest.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.s
}

// Describe says what is stuck (see clustertest.Server.Describe), for a
// suite to print when an Eventually fails. It is "" before Start.
func (e *Environment) Describe() string { return e.server().Describe() }

// Trace is clustertest.Server.Trace: what happened, with wall-clock times
// since Start. On the wall clock it differs from run to run.
func (e *Environment) Trace() []string { return e.server().Trace() }

// Check is clustertest.Server.Check.
func (e *Environment) Check() error { return e.server().Check() }

// SetFaults is clustertest.Server.SetFaults; the delays of Latency stay.
func (e *Environment) SetFaults(f memcluster.Faults) error {
	s := e.server()
	if s == nil {
		return errors.New("envtest: SetFaults before Start")
	}
	f, err := e.withLatency(f)
	if err != nil {
		return err
	}
	return s.SetFaults(f)
}

// Memcluster is clustertest.Server.Memcluster, or nil before Start.
func (e *Environment) Memcluster() *memcluster.Cluster { return e.server().Memcluster() }
