package deployment

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// DefaultMaxRetries is how many times a failing Deployment is retried
// before it is dropped until its next change (upstream maxRetries).
const DefaultMaxRetries = 15

// ControllerConfig wires a [Controller]. The three informers are required;
// the controller registers handlers on them but does not run them (they
// may be shared with other controllers): run them alongside.
type ControllerConfig struct {
	Deployments *informer.Informer[*appsv1.Deployment]
	ReplicaSets *informer.Informer[*appsv1.ReplicaSet]
	Pods        *informer.Informer[*corev1.Pod]

	// Reconciler handles each key. Nil means a [Reconciler] reading the
	// informers' caches and writing with Client, Live and Events.
	Reconciler reconcile.Reconciler
	// Client makes every write of the default Reconciler; required when
	// Reconciler is nil.
	Client Client
	// Live configures the default Reconciler (see
	// [ReconcilerConfig.Live]); nil means the informer cache.
	Live reconcile.Getter[*appsv1.Deployment]
	// Events records events about Deployments; nil discards them.
	Events EventRecorder

	// Clock drives the queue's delays and the Reconciler's time. Nil
	// means the real clock.
	Clock clock.Clock
	// Workers is the number of keys synced in parallel; 0 means 1
	// (kube-controller-manager runs 5).
	Workers int
	// MaxRetries bounds the rate-limited retries of a failing key; 0 means
	// [DefaultMaxRetries].
	MaxRetries int
	// RateLimiter spaces the retries of failing keys; nil means
	// workqueue.DefaultControllerRateLimiter (upstream's: 5ms·2^n up to
	// 1000s, and 10 qps overall).
	RateLimiter workqueue.RateLimiter[types.NamespacedName]
	// Metrics receives the work queue's measurements (depth, latency,
	// work duration, retries); nil takes none. If it also implements
	// reconcile.SkipMetrics it counts the syncs skipped while the cache
	// lags behind the controller's own writes.
	Metrics workqueue.Metrics
	// BatchPeriod delays the sync that a ReplicaSet status change or a
	// pod deletion triggers by this much, and the events of the
	// Deployment that arrive meanwhile join that sync: a burst of them
	// (its ReplicaSets reporting pods ready one by one) costs one sync and
	// one status write instead of one each. The price is latency: every
	// step of a rollout waits the period longer. Deployment events and
	// ReplicaSet spec, label or owner changes still sync at once. Zero
	// syncs at once on every event, like upstream; kube-controller-manager
	// batches EndpointSlice updates the same way
	// (--endpointslice-updates-batch-period).
	BatchPeriod time.Duration
	// EagerStatus configures the default Reconciler: write the status in
	// every sync that changes it, as upstream does, instead of leaving it
	// to the next sync after a sync that only scales ReplicaSets (see
	// [Reconciler.Reconcile]).
	EagerStatus bool
	// FeatureGates configures the default Reconciler (see
	// [ReconcilerConfig.FeatureGates]); Reconciler().SetFeatureGates
	// switches them while it runs.
	FeatureGates features.Gates
}

// Controller is the Deployment controller: informer events become keys in
// a work queue ([EventRules], upstream's handler rules), and workers
// reconcile them. Create it with [NewController] and call Run once.
type Controller struct {
	cfg      ControllerConfig
	queue    *workqueue.Queue[types.NamespacedName]
	rec      reconcile.Reconciler
	own      *Reconciler   // the default Reconciler; nil with the caller's
	tracker  *writeTracker // nil with a Reconciler of the caller's
	regs     []*informer.Registration
	synced   chan struct{} // closed once every handler has synced
	runCalls sync.Once
}

// NewController validates cfg and registers the event handlers. It starts
// no goroutine.
func NewController(cfg ControllerConfig) (*Controller, error) {
	if cfg.Deployments == nil || cfg.ReplicaSets == nil || cfg.Pods == nil {
		return nil, errors.New("deployment: ControllerConfig needs the Deployment, ReplicaSet and Pod informers")
	}
	if cfg.Reconciler == nil && cfg.Client == nil {
		return nil, errors.New("deployment: ControllerConfig needs a Client or a Reconciler")
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("deployment: ControllerConfig.Workers is negative (%d)", cfg.Workers)
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("deployment: ControllerConfig.MaxRetries is negative (%d)", cfg.MaxRetries)
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	deployments, err := reconcile.FromCache(cfg.Deployments.Cache())
	if err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	rss, err := reconcile.FromCache(cfg.ReplicaSets.Cache())
	if err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	c := &Controller{cfg: cfg, rec: cfg.Reconciler, synced: make(chan struct{}),
		queue: workqueue.New(workqueue.Config[types.NamespacedName]{Name: "deployment", Clock: cfg.Clock, RateLimiter: cfg.RateLimiter,
			Metrics: cfg.Metrics})}
	if c.rec == nil {
		pods, err := reconcile.FromCache(cfg.Pods.Cache())
		if err != nil {
			return nil, fmt.Errorf("deployment: %w", err)
		}
		c.tracker = &writeTracker{deployments: cfg.Deployments.Cache(), replicaSets: cfg.ReplicaSets.Cache(),
			live: cfg.Client.GetReplicaSet}
		c.own, err = NewReconciler(ReconcilerConfig{Deployments: deployments, ReplicaSets: rss, Pods: pods,
			Live: cfg.Live, Client: trackingClient{Client: cfg.Client, t: c.tracker}, Events: cfg.Events, Clock: cfg.Clock,
			EagerStatus: cfg.EagerStatus, FeatureGates: cfg.FeatureGates})
		if err != nil {
			return nil, err
		}
		c.rec = c.own
	}
	h := handlers{rules: EventRules{Deployments: deployments, ReplicaSets: rss}, q: c.queue, batch: cfg.BatchPeriod}
	// The queue is served once every handler has seen its informer's
	// first list; see workqueue.Queue.Serve.
	synced := c.serveWhenSynced(3)
	dh, rh, ph := h.deploymentHandler(), h.replicaSetHandler(), h.podHandler()
	dh.OnSynced, rh.OnSynced, ph.OnSynced = synced, synced, synced
	for _, add := range []func() (*informer.Registration, error){
		func() (*informer.Registration, error) { return cfg.Deployments.AddHandler(dh) },
		func() (*informer.Registration, error) { return cfg.ReplicaSets.AddHandler(rh) },
		func() (*informer.Registration, error) { return cfg.Pods.AddHandler(ph) },
	} {
		reg, err := add()
		if err != nil {
			return nil, fmt.Errorf("deployment: %w", err)
		}
		c.regs = append(c.regs, reg)
	}
	return c, nil
}

// Reconciler returns the controller's own Reconciler, or nil when
// ControllerConfig.Reconciler replaced it.
func (c *Controller) Reconciler() *Reconciler { return c.own }

// Run waits until the handlers have seen the informers' initial lists,
// then runs the workers until ctx is done. It then shuts the queue down,
// waits for the syncs in progress and returns nil, as replicaset's
// Controller.Run does. Call it once. The logger comes from ctx
// (logr.FromContextOrDiscard).
func (c *Controller) Run(ctx context.Context) error {
	err := errors.New("deployment: Controller.Run called twice")
	c.runCalls.Do(func() { err = c.run(ctx) })
	return err
}

func (c *Controller) run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	defer c.queue.ShutDown()
	select {
	case <-c.synced: // every handler has seen its informer's first list
	case <-ctx.Done():
		return nil
	}
	log.Info("Starting controller", "controller", "deployment", "workers", c.cfg.Workers)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for c.processNext(ctx, log) {
			}
		})
	}
	<-ctx.Done()
	log.Info("Shutting down controller", "controller", "deployment")
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// processNext syncs one key; false means the queue is shut down.
func (c *Controller) processNext(ctx context.Context, log logr.Logger) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	var res Result
	var err error
	if c.tracker != nil {
		var behind bool
		if behind, err = c.tracker.behind(ctx, key); behind {
			// The event of a write of the last sync is on its way and will
			// enqueue the key again; see writeTracker.
			if m, ok := c.cfg.Metrics.(reconcile.SkipMetrics); ok {
				m.SyncSkipped()
			}
			c.queue.Forget(key)
			return true
		}
		ctx = context.WithValue(ctx, syncKey{}, key)
	}
	if err == nil {
		res, err = c.rec.Reconcile(ctx, key)
	}
	switch {
	case err == nil:
		c.queue.Forget(key)
		if res.RequeueAfter > 0 {
			c.queue.AddAfter(key, res.RequeueAfter)
		}
	case reconcile.IsTerminal(err):
		log.Error(err, "Not retrying deployment", "deployment", key)
		c.queue.Forget(key)
	case c.queue.NumRequeues(key) < c.cfg.MaxRetries:
		log.V(2).Info("Error syncing deployment", "deployment", key, "err", err)
		c.queue.AddRateLimited(key)
	default:
		log.Error(err, "Dropping deployment out of the queue", "deployment", key)
		c.queue.Forget(key)
	}
	return true
}

// handlers feed a controller's queue from its informers through
// [EventRules].
type handlers struct {
	rules EventRules
	q     *workqueue.Queue[types.NamespacedName]
	batch time.Duration
}

// add enqueues what a rule asked for. The queue keeps the earliest
// deadline of a key: the first batched event of a burst sets the time of
// the one sync for all of it.
func (h handlers) add(es []reconcile.Enqueue) {
	for _, e := range es {
		switch {
		case e.After > 0:
			h.q.AddAfter(e.Key, e.After)
		case e.Batch && h.batch > 0:
			h.q.AddAfter(e.Key, h.batch)
		default:
			h.q.Add(e.Key)
		}
	}
}

func (h handlers) deploymentHandler() informer.Handler[*appsv1.Deployment] {
	ctx := context.Background()
	return informer.Handler[*appsv1.Deployment]{
		OnAdd:    func(d *appsv1.Deployment) { h.add(h.rules.DeploymentAdded(ctx, d)) },
		OnUpdate: func(old, cur *appsv1.Deployment) { h.add(h.rules.DeploymentUpdated(ctx, old, cur)) },
		OnDelete: func(d informer.Deleted[*appsv1.Deployment]) { h.add(h.rules.DeploymentDeleted(ctx, d.Obj)) },
	}
}

func (h handlers) replicaSetHandler() informer.Handler[*appsv1.ReplicaSet] {
	ctx := context.Background()
	return informer.Handler[*appsv1.ReplicaSet]{
		OnAdd:    func(rs *appsv1.ReplicaSet) { h.add(h.rules.ReplicaSetAdded(ctx, rs)) },
		OnUpdate: func(old, cur *appsv1.ReplicaSet) { h.add(h.rules.ReplicaSetUpdated(ctx, old, cur)) },
		OnDelete: func(d informer.Deleted[*appsv1.ReplicaSet]) { h.add(h.rules.ReplicaSetDeleted(ctx, d.Obj)) },
	}
}

func (h handlers) podHandler() informer.Handler[*corev1.Pod] {
	ctx := context.Background()
	return informer.Handler[*corev1.Pod]{
		OnDelete: func(d informer.Deleted[*corev1.Pod]) { h.add(h.rules.PodDeleted(ctx, d.Obj)) },
	}
}

// serveWhenSynced returns an OnSynced callback for n handlers. Once all n
// have synced it announces the workers to the queue (see
// workqueue.Queue.Serve), then lets Run start them.
func (c *Controller) serveWhenSynced(n int) func() {
	var left atomic.Int32
	left.Store(int32(n))
	return func() {
		if left.Add(-1) == 0 {
			c.queue.Serve(c.cfg.Workers)
			close(c.synced)
		}
	}
}
