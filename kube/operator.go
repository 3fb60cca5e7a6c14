package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Operator runs ctrlkit's Deployment and ReplicaSet controllers against one
// cluster, reading through ctrlkit's informers. Its zero value is not
// usable: set Config.
type Operator struct {
	// Config reaches the API server. Required. It is copied, never
	// modified. Without a ContentType the operator speaks protobuf, like
	// kube-controller-manager. Its QPS and Burst (kube-controller-manager uses 20 and 30)
	// apply to each of three clients, as in kube-controller-manager: one
	// for the informers and one per controller, which also carries that
	// controller's events.
	Config *rest.Config
	// Namespace limits the controllers to one namespace; "" means all.
	Namespace string
	// Workers is the number of concurrent syncs of each controller; 0
	// means 5, kube-controller-manager's default.
	Workers int
	// DeploymentWorkers and ReplicaSetWorkers, when positive, override
	// Workers for one controller (kube-controller-manager's
	// --concurrent-deployment-syncs and --concurrent-replicaset-syncs).
	DeploymentWorkers, ReplicaSetWorkers int
	// Grace is how long a write in flight at shutdown may go on after the
	// context is cancelled; 0 means 10 s.
	Grace time.Duration
	// BatchPeriod delays the syncs that pod events and ReplicaSet status
	// changes trigger, so that a burst of them costs one sync and one
	// status write (see the controllers' ControllerConfig.BatchPeriod).
	// Zero syncs at once on every event, like kube-controller-manager.
	BatchPeriod time.Duration
	// EagerStatus makes both controllers write statuses with upstream's
	// timing, at the cost of more writes: by default a sync that only
	// creates or deletes pods, or only scales ReplicaSets, leaves the
	// status to the sync its writes' events trigger (see the controllers'
	// ControllerConfig.EagerStatus).
	EagerStatus bool
	// FeatureGates are kube-controller-manager's feature gates both
	// controllers consult (see package features; ctrlkit-controller's
	// --feature-gates sets them); the zero value is v1.37's defaults.
	FeatureGates features.Gates
	// LowPriorityEvents lets each controller's writes go before its
	// events. They still share one budget of Config.QPS and Burst, but an
	// event is sent when none of the controller's requests waits for a
	// token, or when it has waited through 19 of theirs (see
	// [PriorityLimiter]). kube-controller-manager makes them take turns:
	// throttled, its event sink is one waiter beside five workers and
	// takes a sixth of the budget, and client-go's broadcaster drops what
	// does not fit in its queue of 1,000. With this set a throttled
	// controller converges sooner, sends a twentieth of its requests as
	// events instead of a sixth, and drops more of them. It needs
	// Config.RateLimiter unset, and does nothing with a negative QPS (no
	// limit).
	LowPriorityEvents bool
	// EventsAPI selects the API the controllers' events are written with:
	// "" or "core/v1" (client-go's record broadcaster, as
	// kube-controller-manager's Deployment and ReplicaSet controllers
	// do), or "events.k8s.io/v1" (see [EventsAPI]).
	EventsAPI string
	// Metrics, if set, receives the operator's measurements (work queues,
	// syncs, informers) and counts its API requests (see [Metrics]).
	Metrics *Metrics
	// Logger receives the controllers' logs; the zero Logger uses the one
	// in Run's context, if any.
	Logger logr.Logger
	// Sharding, if set, makes the operator one of N active members that
	// share the namespaces (see [Sharding]); Namespace must then be "".
	// Nil runs the controllers for every namespace (or Namespace).
	Sharding *Sharding
}

// Run starts the informers and both controllers and blocks until ctx is
// done. It then stops handing out work, lets the syncs in progress finish
// (their writes get Grace to complete), stops recording events (no event
// is written after Run returns) and returns nil, or the first error of a
// controller.
func (o *Operator) Run(ctx context.Context) error {
	if o.Config == nil {
		return errors.New("kube: Operator.Config is nil")
	}
	log := o.Logger
	if log.GetSink() == nil {
		log = logr.FromContextOrDiscard(ctx)
	}
	ctx = logr.NewContext(ctx, log)
	cfg := rest.CopyConfig(o.Config)
	if cfg.ContentType == "" {
		// kube-controller-manager's default (--kube-api-content-type):
		// protobuf costs a fraction of JSON's CPU to decode, and every
		// watch event is decoded.
		cfg.ContentType = runtime.ContentTypeProtobuf
	}
	if cfg.ContentType == runtime.ContentTypeProtobuf && cfg.AcceptContentTypes == "" {
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	var err error
	if m := o.Metrics; m != nil {
		prev := cfg.WrapTransport
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			if prev != nil {
				rt = prev(rt)
			}
			return m.WrapTransport(rt)
		}
	}
	// One client per role, each with its own QPS and burst, as
	// kube-controller-manager builds them: the informers and each
	// controller do not throttle one another, and a controller's events
	// share its client (and its rate limit) with its writes.
	// With LowPriorityEvents each controller's events have a client of
	// their own that draws on the controller's budget through the low door.
	if o.Metrics != nil && o.Metrics.depth == nil {
		return errors.New("kube: Operator.Metrics was not made by NewMetrics")
	}
	switch o.EventsAPI {
	case "", "core/v1", "events.k8s.io/v1":
	default:
		return fmt.Errorf("kube: Operator.EventsAPI is %q; want core/v1 or events.k8s.io/v1", o.EventsAPI)
	}
	if o.LowPriorityEvents && cfg.RateLimiter != nil {
		return errors.New("kube: Operator.LowPriorityEvents needs Config.QPS and Burst, not Config.RateLimiter")
	}
	var sh *shardRun
	if o.Sharding != nil {
		if o.Namespace != "" {
			return fmt.Errorf("kube: Operator.Namespace is %q: a sharded operator shares every namespace with its group", o.Namespace)
		}
		scfg, err := o.Sharding.withDefaults()
		if err != nil {
			return err
		}
		lcfg := rest.CopyConfig(cfg)
		lcfg.UserAgent = rest.DefaultKubernetesUserAgent() + "/ctrlkit/shard-member"
		leases, err := kubernetes.NewForConfig(lcfg)
		if err != nil {
			return fmt.Errorf("kube: %w", err)
		}
		sh = &shardRun{cfg: scfg, leases: leases, guard: &writeGuard{}, stats: &watchStats{}}
	}
	var clients, events [3]kubernetes.Interface
	for i, role := range []string{"shared-informers", "deployment-controller", "replicaset-controller"} {
		c := rest.CopyConfig(cfg)
		c.UserAgent = rest.DefaultKubernetesUserAgent() + "/ctrlkit/" + role
		if sh != nil && i > 0 {
			prev := c.WrapTransport
			c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
				if prev != nil {
					rt = prev(rt)
				}
				return sh.guard.wrap(rt)
			}
		}
		var ev *rest.Config
		if i > 0 && o.LowPriorityEvents && c.QPS >= 0 {
			qps, burst := c.QPS, c.Burst
			if qps == 0 {
				qps = rest.DefaultQPS
			}
			if burst == 0 {
				burst = rest.DefaultBurst
			}
			l, err := NewPriorityLimiter(qps, burst)
			if err != nil {
				return err
			}
			ev = rest.CopyConfig(c)
			c.RateLimiter, ev.RateLimiter = l.High(), l.Low()
		}
		if clients[i], err = kubernetes.NewForConfig(c); err != nil {
			return fmt.Errorf("kube: %w", err)
		}
		events[i] = clients[i]
		if ev != nil {
			if events[i], err = kubernetes.NewForConfig(ev); err != nil {
				return fmt.Errorf("kube: %w", err)
			}
		}
	}
	r := operatorRun{informers: clients[0], deployments: clients[1], replicaSets: clients[2],
		deploymentEvents: events[1], replicaSetEvents: events[2], sharding: sh,
		namespace: o.Namespace, workers: o.Workers, dWorkers: o.DeploymentWorkers, rsWorkers: o.ReplicaSetWorkers, grace: o.Grace, batch: o.BatchPeriod, eager: o.EagerStatus, gates: o.FeatureGates, metrics: o.Metrics, eventsAPI: o.EventsAPI == "events.k8s.io/v1"}
	if r.workers <= 0 {
		r.workers = 5
	}
	if r.dWorkers <= 0 {
		r.dWorkers = r.workers
	}
	if r.rsWorkers <= 0 {
		r.rsWorkers = r.workers
	}
	if r.grace <= 0 {
		r.grace = 10 * time.Second
	}
	if sh != nil {
		// A fenced range's writes in flight must land before another
		// member may take it over.
		r.grace = min(r.grace, sh.cfg.LeaseDuration-sh.cfg.RenewDeadline)
	}
	return r.run(ctx)
}

// operatorRun is one run of an Operator, on its clients.
type operatorRun struct {
	informers, deployments, replicaSets kubernetes.Interface
	// The controllers' events go through these; nil means the
	// controllers' own clients.
	deploymentEvents, replicaSetEvents kubernetes.Interface

	namespace string
	// workers is the default of dWorkers and rsWorkers, the workers of
	// each controller.
	workers, dWorkers, rsWorkers int
	grace                        time.Duration
	batch                        time.Duration
	eager                        bool
	gates                        features.Gates
	metrics                      *Metrics
	eventsAPI                    bool // events.k8s.io/v1 instead of core/v1
	sharding                     *shardRun
}

func (o *operatorRun) run(ctx context.Context) error {
	// Each controller records its events through its own client, as in
	// kube-controller-manager. Events of the syncs that drain after ctx is
	// cancelled are still recorded until Shutdown, which lets the write in
	// flight finish and none start after it.
	dEventsClient, rsEventsClient := o.deploymentEvents, o.replicaSetEvents
	if dEventsClient == nil {
		dEventsClient = o.deployments
	}
	if rsEventsClient == nil {
		rsEventsClient = o.replicaSets
	}
	start := func(cs kubernetes.Interface) (EventRecorders, error) {
		if o.eventsAPI {
			return StartEventsAPI(context.WithoutCancel(ctx), cs)
		}
		return StartEvents(context.WithoutCancel(ctx), cs), nil
	}
	dEvents, err := start(dEventsClient)
	if err != nil {
		return err
	}
	defer dEvents.Shutdown()
	rsEvents, err := start(rsEventsClient)
	if err != nil {
		return err
	}
	defer rsEvents.Shutdown()
	if o.sharding != nil {
		return o.runSharded(ctx, dEvents, rsEvents)
	}
	return o.runControllers(ctx, dEvents, rsEvents, nil, "")
}

// runControllers runs the informers and both controllers until ctx is
// done, then drains them. With a filter, the informers hold only its
// ranges' objects and owner names them in the metrics.
func (o *operatorRun) runControllers(ctx context.Context, dEvents, rsEvents EventRecorders, f *rangeFilter, owner string) error {
	log := logr.FromContextOrDiscard(ctx)
	cs, grace := o.informers, o.grace
	dLW, rsLW, podLW := Deployments(cs, o.namespace), ReplicaSets(cs, o.namespace), Pods(cs, o.namespace)
	dTr, rsTr, podTr := dropManagedFields[*appsv1.Deployment], dropManagedFields[*appsv1.ReplicaSet], dropManagedFields[*corev1.Pod]
	switch {
	case f != nil && f.fan != nil: // the member's informers, shared: their objects are transformed already
		dLW, rsLW, podLW = f.fan.d.source(f.keep), f.fan.rs.source(f.keep), f.fan.pod.source(f.keep)
		dTr, rsTr, podTr = nil, nil, nil
	case f != nil:
		dLW, rsLW, podLW = shardedDeployments(cs, f), shardedReplicaSets(cs, f), shardedPods(cs, f)
	}
	dInf := informer.New(dLW, informer.Config[*appsv1.Deployment]{Transform: dTr, Logger: log.WithName("informer")})
	rsInf := informer.New(rsLW, informer.Config[*appsv1.ReplicaSet]{Transform: rsTr, Logger: log.WithName("informer")})
	podInf := informer.New(podLW, informer.Config[*corev1.Pod]{Transform: podTr, Logger: log.WithName("informer")})

	dLimiter := workqueue.DefaultControllerRateLimiter[types.NamespacedName]()
	rsLimiter := workqueue.DefaultControllerRateLimiter[types.NamespacedName]()
	var dQueue, rsQueue workqueue.Metrics
	if m := o.metrics; m != nil {
		dLimiter = m.RateLimiter("deployment", dLimiter)
		rsLimiter = m.RateLimiter("replicaset", rsLimiter)
		dQueue, rsQueue = m.Queue("deployment"), m.Queue("replicaset")
		defer dQueue.(queueMetrics).release()
		defer rsQueue.(queueMetrics).release()
		m.addObjects(owner, "deployments", dInf.Cache().Len)
		m.addObjects(owner, "replicasets", rsInf.Cache().Len)
		m.addObjects(owner, "pods", podInf.Cache().Len)
		if owner != "" {
			defer m.dropObjects(owner)
		}
	}
	// The controllers build their own Reconcilers: those read ReplicaSets
	// through an index and wait for the controllers' own writes to reach
	// the caches before syncing again (fewer writes, no self-conflicts).
	dc, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf,
		Client:  DeploymentClient{Clientset: o.deployments, Grace: grace},
		Live:    LiveDeployments(o.deployments, grace),
		Events:  dEvents.Deployment(),
		Workers: o.dWorkers, RateLimiter: dLimiter, Metrics: dQueue, BatchPeriod: o.batch, EagerStatus: o.eager,
		FeatureGates: o.gates,
	})
	if err != nil {
		return err
	}
	rsc, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: rsInf, Pods: podInf, Client: ReplicaSetClient{Clientset: o.replicaSets, Grace: grace},
		Events: rsEvents.ReplicaSet(), Workers: o.rsWorkers, RateLimiter: rsLimiter, Metrics: rsQueue, BatchPeriod: o.batch,
		EagerStatus: o.eager, FeatureGates: o.gates,
	})
	if err != nil {
		return err
	}

	// The informers stop only after both controllers have drained, so
	// that no sync in progress reads from a cache that stopped moving.
	infCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopInformers()
	var infWG sync.WaitGroup
	errs := make(chan error, 5)
	for _, run := range []func(context.Context) error{dInf.Run, rsInf.Run, podInf.Run} {
		infWG.Go(func() {
			if err := run(infCtx); err != nil {
				errs <- err
			}
		})
	}
	var ctlWG sync.WaitGroup
	ctlWG.Go(func() {
		if err := dc.Run(logr.NewContext(ctx, log.WithName("deployment"))); err != nil && !errors.Is(err, context.Canceled) {
			errs <- err
		}
	})
	ctlWG.Go(func() {
		if err := rsc.Run(logr.NewContext(ctx, log.WithName("replicaset"))); err != nil {
			errs <- err
		}
	})
	log.Info("Started controllers", "namespace", o.namespace, "deploymentWorkers", o.dWorkers, "replicaSetWorkers", o.rsWorkers)
	ctlWG.Wait()
	stopInformers()
	infWG.Wait()
	log.Info("Controllers drained")
	close(errs)
	return <-errs
}

// dropManagedFields is the informers' Transform: nothing reads
// managedFields, and they are a large part of each object.
func dropManagedFields[T informer.Object](obj T) (T, error) {
	obj.SetManagedFields(nil)
	return obj, nil
}
