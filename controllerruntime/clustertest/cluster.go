package clustertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime/crd"
	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/admission"
	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble"
	"github.com/ctrlkit/ctrlkit/internal/gate"
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
	// Kubelet registers the Nodes of Options.Kubelet, binds pods to them
	// and runs them through Pending, Running and Ready (or a failure), as
	// Options.Kubelet's model says, and finishes their graceful deletions.
	Kubelet
	// NamespaceController deletes the content of a namespace being
	// deleted, then the namespace. It runs only with the GarbageCollector:
	// disabling the collector disables it too.
	NamespaceController
	// DisruptionController computes the status of PodDisruptionBudgets,
	// which the eviction of a pod they cover needs (without it, such an
	// eviction answers 429, as in envtest).
	DisruptionController

	// AllControllers is every built-in controller.
	AllControllers = DeploymentController | ReplicaSetController | GarbageCollector | Kubelet | NamespaceController | DisruptionController
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
	// UIDs, injected faults, the kubelet's model; and, in [Test], the
	// global source of math/rand, which client-go's jitter draws from.
	Seed uint64
	// Faults are injected from the start (SetFaults changes them).
	Faults memcluster.Faults
	// Concurrent lets the cluster's steps happen as their goroutines run,
	// instead of one at a time in a fixed order. Virtual time stays exact,
	// but the order of what happens within one instant, and so the trace,
	// may differ from run to run.
	Concurrent bool
	// Interleave lets Seed choose, at each step, which of the steps ready
	// at that instant goes first (a request, a watch event on its way to
	// a watch, a kubelet pass), within what Kubernetes allows: each watch
	// keeps its order, and a goroutine's requests are served in order.
	// Without it the order is the canonical one. [Cluster.Schedule] says
	// which choices a bench made; see [Explore].
	Interleave bool
	// Schedule, if set, replays a schedule ([Cluster.Schedule], or the
	// one [Explore] prints): the same test with the same Options runs
	// exactly as the bench that made it. It overrides Interleave.
	Schedule string
	// Perturb lets Seed, with Interleave, also perturb the cluster at any
	// step: watches that lag, close, or expire and relist, restarts,
	// conflicting writers, leader handovers (see [Perturbations]).
	// [AllPerturbations] turns every one on.
	Perturb Perturbations
	// PerturbTestClient lets PerturbConflict beat the test's own updates
	// and patches too: those of [Cluster.Client], and of the memcluster's
	// direct clients the test calls. Off (the default), another writer
	// only ever races your controllers and the built-in ones, and a test
	// that updates an object without retrying on a conflict is not failed
	// by a 409 it did not ask for. Turn it on when your test plays a user
	// who writes what your operator writes, and retries as a user would
	// (k8s.io/client-go/util/retry.RetryOnConflict). The clients of
	// [Cluster.Config] are not the test's own: a Manager may be built
	// from it.
	PerturbTestClient bool
	// UntrackedBuiltinWrites leaves the writes of the built-in controllers
	// and of the kubelet out of metadata.managedFields: their updates keep
	// an object's managedFields as they were, and the ReplicaSets and pods
	// they create have none (see memcluster.Config.UntrackedManagers). It
	// saves most of the CPU a rollout spends recording them (a bench
	// under -race beside other busy processes may need it to meet short
	// deadlines); your own writes and every server-side apply are recorded
	// as before. Off (the default), managedFields are kube-apiserver's.
	UntrackedBuiltinWrites bool
	// RequestLatency is how long the cluster takes to answer each REST
	// request, on its clock: the request waits that long before it is
	// served. Zero (the default) answers at once, so that in [Test]
	// everything a change sets off happens at one virtual instant. With
	// a latency, a controller that writes in a loop lets time pass, as
	// it would against a real API server, instead of holding the clock
	// at one instant (package controllerruntime/envtest sets 1 ms in
	// virtual time, so that a suite's polls run beside such a loop).
	RequestLatency time.Duration

	onWrite func(memcluster.Write) // Explore's properties: every stored write
	guide   []guided               // shrinking: the choices to follow (see shrink.go)
	shared  *shared                // what the benches of one Explore share; nil: the bench's own

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
	t       testing.TB // nil for a Server's
	mc      *memcluster.Cluster
	scheme  *runtime.Scheme
	cfg     *rest.Config
	sched   *scheduler
	rec     *recorder
	kinds   *kinds
	names   counter
	opts    Options
	start   time.Time
	bubble  uint64 // the synctest bubble, 0 outside one
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errMu   sync.Mutex
	errs    []error
	cl      client.Client
	clOnce  sync.Once
	clErr   error
	stopped bool // stop has run

	otherMu sync.Mutex
	other   dynamic.Interface // PerturbConflict's other writer
	otherN  int               // its changes so far

	filter atomic.Pointer[func(*http.Request)] // tests: sees every REST request

	admission *admission.Admission // webhooks and policies (see memcluster.Config.Admission)
}

// Test runs f in a testing/synctest bubble with a new Cluster, and stops
// the cluster and everything started with [Cluster.Start] when f returns
// and its cleanups have run. Inside the bubble, time (time.Now, timers,
// sleeps: client-go's and controller-runtime's too) is virtual: it starts
// at 2000-01-01 00:00 UTC and moves only when every goroutine of the
// bubble is blocked, straight to the next timer. An hour of requeues takes
// no wall-clock time.
//
// Everything of the test must run inside f: goroutines started outside
// the bubble do not take part in its time, and synctest forbids channels
// shared across its edge. See testing/synctest for the rules.
//
// A bench that cannot end does not take the test binary down: goroutines
// still running 30 virtual seconds after the cluster stopped fail the
// test, named with where they wait, and so does a deadlock (every
// goroutine of the test blocked, no timer pending), which testing/synctest
// would otherwise turn into a panic of the whole binary.
func Test(t *testing.T, opts Options, f func(t *testing.T, c *Cluster)) {
	t.Helper()
	var bubble uint64
	var reported bool
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if err, ok := r.(error); !ok || !strings.HasPrefix(err.Error(), "deadlock: ") {
			panic(r)
		}
		if reported {
			return // the goroutines left were named already
		}
		t.Errorf("clustertest: the test deadlocked (testing/synctest: %v): every goroutine of the bubble is blocked and no timer is pending; they wait at:\n%s",
			r, strings.Join(leftovers(bubble, 0, nil), "\n"))
	}()
	// controller-runtime falls back to a silent logger when nobody set one
	// 30 s after the process started, by the clock; inside a bubble that
	// clock reads 2000, the fallback never comes, and every logger a
	// Manager derives stays queued for ever. Ask it here, on the wall clock.
	ctrllog.Log.Enabled()
	synctest.Test(t, func(t *testing.T) {
		seedGlobal(opts.Seed)
		c, err := start(t, opts, true)
		if err != nil {
			t.Fatal(err)
		}
		bubble = c.bubble
		t.Cleanup(func() { reported = c.stop() })
		f(t, c)
	})
}

// start starts a cluster: in a synctest bubble for Test and for a Server
// started in one (serial: steps one at a time, unless opts.Concurrent),
// on the wall clock for a Server (t nil).
func start(t testing.TB, opts Options, serial bool) (*Cluster, error) {
	scheme := opts.Scheme
	if scheme == nil {
		scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return nil, err
		}
	}
	choose, err := chooserFor(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	sched := newScheduler(serial && !opts.Concurrent)
	sched.choose = choose
	c := &Cluster{t: t, scheme: scheme, opts: opts, start: time.Now(), ctx: ctx, cancel: cancel,
		sched: sched, rec: newRecorder(sched), kinds: &kinds{}}
	if serial {
		c.bubble = bubble.Current()
	}
	c.sched.onHalt = func(msg string) { c.fail(errors.New(msg)) }
	c.sched.note = c.rec.note
	c.sched.conflict = func(st gate.Step) { c.wg.Go(func() { c.conflictWrite(st) }) }
	if opts.shared == nil {
		opts.shared = newShared()
	}
	c.opts.shared = opts.shared
	builtinTypes := opts.shared.builtinTypes
	var api http.Handler // the cluster's REST API, for its admission's own reads
	adm, err := admission.New(admission.Config{Scheme: scheme, NoKeepAlive: serial,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { api.ServeHTTP(w, r) })})
	if err != nil {
		cancel()
		return nil, err
	}
	c.admission = adm
	c.mc = memcluster.New(memcluster.Config{
		Seed: opts.Seed, Gate: c.sched, OnWrite: func(w memcluster.Write) {
			c.rec.write(w)
			c.sched.wrote()
			adm.Wrote(w)
			if opts.onWrite != nil {
				opts.onWrite(w)
			}
		},
		Admission:              adm,
		OnRequest:              c.rec.request,
		NoGarbageCollection:    opts.Disable&GarbageCollector != 0,
		NoNamespaceController:  opts.Disable&NamespaceController != 0,
		NoDisruptionController: opts.Disable&DisruptionController != 0,
		// As on a real cluster: default, kube-system, kube-public and
		// kube-node-lease exist.
		RequireNamespaces: true,
		// Server-side apply and managedFields: client-go's schemas, else
		// deduced types.
		TypeConverter:     memcluster.TypeConverterChain(builtinTypes, managedfields.NewDeducedTypeConverter()),
		UntrackedManagers: untrackedManagers(opts),
	})
	api = memcluster.NewHandler(c.mc)
	if c.sched.serial {
		c.wg.Go(func() { c.sched.run(ctx) })
	}
	fail := func(err error) (*Cluster, error) {
		c.shutdown()
		return nil, err
	}
	// The CRDs first: their kinds are served with their schemas, not as
	// the Go types Options.Types may also name.
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
	memcluster.AddBuiltinKinds(c.mc) // keeps a built-in kind given in Types or Kinds
	if err := c.mc.SetFaults(opts.Faults); err != nil {
		return fail(fmt.Errorf("clustertest: Options.Faults: %w", err))
	}
	if opts.RequestLatency < 0 {
		return fail(fmt.Errorf("clustertest: negative Options.RequestLatency %v", opts.RequestLatency))
	}
	fr := front{rec: c.rec, next: memcluster.NewHandler(c.mc), filter: &c.filter, latency: opts.RequestLatency}
	if opts.onWrite != nil {
		fr.preconditions = true // Explore's properties judge them
	}
	c.cfg = &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: fr},
		QPS: -1} // no client-side throttling: the cluster answers at once, in virtual time
	if err := c.startBuiltins(); err != nil {
		return fail(err)
	}
	return c, nil
}

// builtinManagers are the field managers of the bench's own writers:
// the built-in controllers (memcluster.ControllerClient's default) and
// the kubelet.
var builtinManagers = []string{"kube-controller-manager", "kubelet"}

// untrackedManagers returns the managers whose writes opts leaves out of
// managedFields.
func untrackedManagers(opts Options) []string {
	if opts.UntrackedBuiltinWrites {
		return builtinManagers
	}
	return nil
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

// leftoverGrace is how long (virtual time) stop waits for the goroutines
// of the bubble to end once everything it started has returned.
const leftoverGrace = 30 * time.Second

// shutdown ends everything the cluster started and returns the errors of
// what was started with Start.
func (c *Cluster) shutdown() []error {
	if c.stopped {
		return nil
	}
	c.stopped = true
	c.cancel()
	c.admission.Stop()
	c.wg.Wait()
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return slices.Clone(c.errs)
}

// stop is shutdown for a Test: it fails the test with the errors of what
// was started with Start and with the goroutines of the bubble that do not
// end, and reports whether it named goroutines left behind.
func (c *Cluster) stop() (leftBehind bool) {
	for _, err := range c.shutdown() {
		c.t.Error(err)
	}
	self := bubble.Self()
	for wait := time.Millisecond; ; wait *= 2 {
		synctest.Wait()
		left := leftovers(c.bubble, self, c.opts.shared)
		if len(left) == 0 {
			return false
		}
		if wait > leftoverGrace {
			c.t.Errorf("clustertest: goroutines still running %v after the cluster stopped (something the test started was not stopped, or does not end with its context); they wait at:\n%s",
				leftoverGrace, strings.Join(left, "\n"))
			return true
		}
		time.Sleep(wait)
	}
}

// Config returns a rest.Config for the cluster: unchanged client-go and
// controller-runtime code works with it, through an in-process transport
// (no socket). Each call returns a new copy, whose clients the trace names
// "config" (the first copy), "config#2" (the second), and so on.
func (c *Cluster) Config() *rest.Config { return namedConfig(c.cfg, c.names.next("config")) }

// Scheme returns the cluster's scheme.
func (c *Cluster) Scheme() *runtime.Scheme { return c.scheme }

// Memcluster returns the in-memory API server, for what the Kubernetes API
// cannot do: its direct clients, the kubelet's model, faults.
func (c *Cluster) Memcluster() *memcluster.Cluster { return c.mc }

// Client returns an uncached controller-runtime client of the cluster, for
// the test's own reads and writes. The trace names it "client".
func (c *Cluster) Client() client.Client {
	c.clOnce.Do(func() {
		c.cl, c.clErr = client.New(namedConfig(c.cfg, c.names.next(testClient)), client.Options{Scheme: c.scheme})
	})
	if c.clErr != nil {
		c.t.Fatalf("clustertest: client: %v", c.clErr)
	}
	return c.cl
}

// NewManager returns a controller-runtime Manager on the cluster, with
// opts as given except what a test bench needs: the cluster's scheme
// (unless opts sets one), no metrics server, no health probes, no leader
// election (see [Cluster.StartLeaderElected] for replicas that elect a
// leader), and controller names that need not be unique in the process
// (each test builds its own). Its cache tells the bench which kinds its
// controllers wait on, for [Cluster.RunUntil]'s answers. The trace names
// its clients "manager" ("manager#2" for the second Manager). Start it
// with [Cluster.Start].
func (c *Cluster) NewManager(opts manager.Options) manager.Manager {
	c.t.Helper()
	mgr, err := c.newManager(opts)
	if err != nil {
		c.t.Fatalf("clustertest: manager: %v", err)
	}
	return mgr
}

func (c *Cluster) newManager(opts manager.Options) (manager.Manager, error) {
	return c.newManagerNamed(opts, namedConfig(c.cfg, c.names.next("manager")), false)
}

// newManagerNamed is newManager with its config, and leader election
// (StartLeaderElected's) or none.
func (c *Cluster) newManagerNamed(opts manager.Options, cfg *rest.Config, leaderElection bool) (manager.Manager, error) {
	if opts.Scheme == nil {
		opts.Scheme = c.scheme
	}
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.LeaderElection = leaderElection
	skip := true
	opts.Controller.SkipNameValidation = &skip
	opts.NewCache = c.kinds.newCache(opts.NewCache)
	return manager.New(cfg, opts)
}

// fail records err as a failure of the bench: the test fails with it,
// and RunUntil stops waiting.
func (c *Cluster) fail(err error) {
	c.errMu.Lock()
	c.errs = append(c.errs, err)
	c.errMu.Unlock()
	c.sched.wrote() // wakes RunUntil
}

// Start runs r (a Manager, say) until the test ends. An error it returns
// before then fails the test, and ends [Cluster.RunUntil] at once.
func (c *Cluster) Start(r manager.Runnable) {
	c.wg.Go(func() {
		if err := r.Start(c.ctx); err != nil && c.ctx.Err() == nil {
			c.fail(fmt.Errorf("clustertest: %T stopped: %w", r, err))
		}
	})
}

// SetFaults replaces the faults injected into requests and watches (see
// memcluster.Faults), for your controllers' requests and the built-in
// controllers' alike.
//
// A bad rule is an error (see memcluster's Cluster.SetFaults), and the
// faults stay as they were.
func (c *Cluster) SetFaults(f memcluster.Faults) error { return c.mc.SetFaults(f) }

// Now returns the virtual time elapsed since the cluster started.
func (c *Cluster) Now() time.Duration { return time.Since(c.start) }
