package clustertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime/crd"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// Controllers is a set of the built-in controllers a Cluster runs.
type Controllers uint8

// The built-in controllers.
const (
	// DeploymentController is ctrlkit's Deployment controller (the
	// behaviour of kube-controller-manager v1.37's).
	DeploymentController Controllers = 1 << iota
	// ReplicaSetController is ctrlkit's ReplicaSet controller.
	ReplicaSetController
	// GarbageCollector deletes objects whose owners are all gone, and the
	// dependents of a deleted object (background and orphan propagation).
	GarbageCollector
	// Kubelet schedules pods to fake nodes and runs them through Pending,
	// Running and Ready (or a failure), as Options.Kubelet's model says.
	Kubelet

	// AllControllers is every built-in controller.
	AllControllers = DeploymentController | ReplicaSetController | GarbageCollector | Kubelet
)

// Options configures a Cluster. The zero value is a cluster of client-go's
// kinds with every built-in controller running, in deterministic order.
type Options struct {
	// Scheme holds the kinds the cluster stores and serves: client-go's
	// (add them with k8s.io/client-go/kubernetes/scheme.AddToScheme) and
	// your own. Nil means client-go's scheme alone.
	Scheme *runtime.Scheme
	// Types are example objects of your own kinds (custom resources),
	// registered in Scheme: the cluster stores them with
	// CustomResourceDefinition semantics (see memcluster.KindFor), with a
	// status subresource if the type has a Status field. Set Kinds instead
	// to adjust a kind (its plural, its scope).
	Types []client.Object
	// Kinds are your own kinds with their options, as Types.
	Kinds []Kind
	// Disable is the set of built-in controllers not to run: for
	// instance DeploymentController|ReplicaSetController to drive a
	// Deployment's status by hand.
	Disable Controllers
	// Kubelet configures the simulated kubelet: nodes, and how pods
	// behave (start and readiness delays, crashes, image pulls).
	Kubelet memcluster.KubeletConfig
	// Seed seeds every random choice of the cluster: generated names and
	// UIDs, injected faults, the kubelet's model.
	Seed uint64
	// Faults are injected from the start (SetFaults changes them).
	Faults memcluster.Faults
	// Concurrent lets the cluster's steps happen as their goroutines run,
	// instead of one at a time in a fixed order. Virtual time stays exact,
	// but the order of what happens within one instant, and so the trace,
	// may differ from run to run.
	Concurrent bool

	// CRDDirectoryPaths (files, and directories of .yaml, .yml and .json
	// files) and CRDs are the CustomResourceDefinitions to install, as
	// envtest's options of the same names: they are created through the
	// cluster's API before the test's function runs, and their kinds are
	// served with their schemas (validation, CEL rules, defaults, pruning,
	// versions, subresources; see package controllerruntime/crd). A kind
	// that has both a CRD and a Go type in Types or Kinds is the CRD's: its
	// schema rules, and the Go type is only how your code reads it.
	// CustomResourceDefinitions the test creates through the API are
	// served too.
	CRDDirectoryPaths []string
	CRDs              []*apiextensionsv1.CustomResourceDefinition
}

// Kind is one of your own kinds, as in [Options.Kinds].
type Kind struct {
	Example client.Object
	Options memcluster.KindOptions
}

// Cluster is an in-memory Kubernetes API server, with built-in
// controllers, on the virtual clock of a synctest bubble. Create it with
// [Test].
type Cluster struct {
	t       testing.TB
	mc      *memcluster.Cluster
	scheme  *runtime.Scheme
	cfg     *rest.Config
	sched   *scheduler
	rec     *recorder
	opts    Options
	start   time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errMu   sync.Mutex
	errs    []error
	cl      client.Client
	clOnce  sync.Once
	clErr   error
	running bool
}

// Test runs f in a testing/synctest bubble with a new Cluster, and stops
// the cluster and everything started with [Cluster.Start] when f returns.
// Inside the bubble, time (time.Now, timers, sleeps: client-go's and
// controller-runtime's too) is virtual: it starts at 2000-01-01 00:00 UTC
// and moves only when every goroutine of the bubble is blocked, straight
// to the next timer. An hour of requeues takes no wall-clock time.
//
// Everything of the test must run inside f: goroutines started outside
// the bubble do not take part in its time, and synctest forbids channels
// shared across its edge. See testing/synctest for the rules.
func Test(t *testing.T, opts Options, f func(t *testing.T, c *Cluster)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		c, err := start(t, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.stop()
		f(t, c)
	})
}

func start(t testing.TB, opts Options) (*Cluster, error) {
	scheme := opts.Scheme
	if scheme == nil {
		scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cluster{t: t, scheme: scheme, opts: opts, start: time.Now(), ctx: ctx, cancel: cancel,
		sched: newScheduler(!opts.Concurrent), rec: newRecorder()}
	c.mc = memcluster.New(memcluster.Config{
		Seed: opts.Seed, Gate: c.sched, OnWrite: func(w memcluster.Write) { c.rec.write(w); c.sched.wrote() },
		NoGarbageCollection: opts.Disable&GarbageCollector != 0,
	})
	memcluster.AddCoreKinds(c.mc)
	if !opts.Concurrent {
		c.wg.Go(func() { c.sched.run(ctx) })
	}
	fail := func(err error) (*Cluster, error) {
		c.stop()
		return nil, err
	}
	crdKinds, err := c.installCRDs()
	if err != nil {
		return fail(err)
	}
	kinds := opts.Kinds
	for _, obj := range opts.Types {
		kinds = append(kinds, Kind{Example: obj})
	}
	for _, k := range kinds {
		if k.Example == nil {
			return fail(errors.New("clustertest: a nil example object in Options.Types or Kinds"))
		}
		kind, err := memcluster.KindFor[memcluster.Object](scheme, k.Example, k.Options)
		if err != nil {
			return fail(fmt.Errorf("clustertest: %w", err))
		}
		if crdKinds[kind.GVK.GroupKind()] {
			continue // the CRD's
		}
		memcluster.NewResource(c.mc, kind)
	}
	c.mc.SetFaults(opts.Faults)
	c.cfg = &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: withoutWatchList{memcluster.NewHandler(c.mc)}},
		QPS: -1} // no client-side throttling: the cluster answers at once, in virtual time
	if err := c.startBuiltins(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// installCRDs serves CustomResourceDefinitions, installs
// Options.CRDDirectoryPaths and Options.CRDs, and returns the kinds they
// serve.
func (c *Cluster) installCRDs() (map[schema.GroupKind]bool, error) {
	installed, err := crd.Bench(c.ctx, c.mc, c.opts.CRDDirectoryPaths, c.opts.CRDs)
	if err != nil {
		return nil, fmt.Errorf("clustertest: %w", err)
	}
	kinds := map[schema.GroupKind]bool{}
	for _, def := range installed {
		kinds[schema.GroupKind{Group: def.Spec.Group, Kind: def.Spec.Names.Kind}] = true
	}
	return kinds, nil
}

// stop ends everything the cluster started, then reports the errors of
// what was started with Start.
func (c *Cluster) stop() {
	c.cancel()
	c.wg.Wait()
	c.errMu.Lock()
	defer c.errMu.Unlock()
	for _, err := range c.errs {
		c.t.Error(err)
	}
}

// Config returns a rest.Config for the cluster: unchanged client-go and
// controller-runtime code works with it, through an in-process transport
// (no socket). Each call returns a new copy.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.cfg) }

// Scheme returns the cluster's scheme.
func (c *Cluster) Scheme() *runtime.Scheme { return c.scheme }

// Memcluster returns the in-memory API server, for what the Kubernetes API
// cannot do: its direct clients, the kubelet's model, faults.
func (c *Cluster) Memcluster() *memcluster.Cluster { return c.mc }

// Client returns an uncached controller-runtime client of the cluster, for
// the test's own reads and writes.
func (c *Cluster) Client() client.Client {
	c.clOnce.Do(func() { c.cl, c.clErr = client.New(c.Config(), client.Options{Scheme: c.scheme}) })
	if c.clErr != nil {
		c.t.Fatalf("clustertest: client: %v", c.clErr)
	}
	return c.cl
}

// NewManager returns a controller-runtime Manager on the cluster, with
// opts as given except what a test bench needs: the cluster's scheme
// (unless opts sets one), no metrics server, no health probes, no leader
// election, and controller names that need not be unique in the process
// (each test builds its own). Start it with [Cluster.Start].
func (c *Cluster) NewManager(opts manager.Options) manager.Manager {
	c.t.Helper()
	if opts.Scheme == nil {
		opts.Scheme = c.scheme
	}
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.LeaderElection = false
	skip := true
	opts.Controller = config.Controller{SkipNameValidation: &skip}
	mgr, err := manager.New(c.Config(), opts)
	if err != nil {
		c.t.Fatalf("clustertest: manager: %v", err)
	}
	return mgr
}

// Start runs r (a Manager, say) until the test ends. An error it returns
// before then fails the test.
func (c *Cluster) Start(r manager.Runnable) {
	c.wg.Go(func() {
		if err := r.Start(c.ctx); err != nil && c.ctx.Err() == nil {
			c.errMu.Lock()
			c.errs = append(c.errs, fmt.Errorf("clustertest: %T stopped: %w", r, err))
			c.errMu.Unlock()
		}
	})
}

// SetFaults replaces the faults injected into requests and watches (see
// memcluster.Faults), for your controllers' requests and the built-in
// controllers' alike.
func (c *Cluster) SetFaults(f memcluster.Faults) { c.mc.SetFaults(f) }

// Now returns the virtual time elapsed since the cluster started.
func (c *Cluster) Now() time.Duration { return time.Since(c.start) }
