package deployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/worker"
	"github.com/ctrlkit/ctrlkit/internal/writes"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

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
	// means the informers' clock; another clock than theirs is an error
	// when theirs is a *clock.Fake (the controller would take no part in
	// the simulation).
	Clock clock.Clock
	// Workers is the number of keys synced in parallel; 0 means 1
	// (kube-controller-manager runs 5).
	Workers int
	// MaxRetries bounds the rate-limited retries of a failing key, after
	// which it is dropped until its next event; 0 means no bound, as in
	// replicaset's Controller and controller-runtime (upstream's
	// Deployment controller drops a key after 15).
	MaxRetries int
	// RateLimiter spaces the retries of failing keys; nil means
	// workqueue.DefaultControllerRateLimiter (upstream's: 5ms·2^n up to
	// 1000s, and 10 qps overall).
	RateLimiter workqueue.RateLimiter[types.NamespacedName]
	// Metrics receives the work queue's measurements (depth, latency,
	// work duration, retries); nil takes none. If it also has a method
	// SyncSkipped() it is told of each sync skipped while the cache lags
	// behind the controller's own writes.
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
	queue    *workqueue.Queue[types.NamespacedName]
	own      *Reconciler // the default Reconciler; nil with the caller's
	loop     worker.Loop
	synced   <-chan struct{} // closed once every handler has synced
	runCalls worker.Once
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
	if err := worker.CheckConfig("deployment: ControllerConfig", cfg.Workers, cfg.MaxRetries, cfg.BatchPeriod); err != nil {
		return nil, err
	}
	clk, err := worker.Clock("deployment: ControllerConfig", cfg.Clock, cfg.Deployments.Clock(), cfg.ReplicaSets.Clock(), cfg.Pods.Clock())
	if err != nil {
		return nil, err
	}
	cfg.Clock = clk
	deployments, err := reconcile.FromCache(cfg.Deployments.Cache())
	if err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	rss, err := reconcile.FromCache(cfg.ReplicaSets.Cache())
	if err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	workers := max(cfg.Workers, 1)
	c := &Controller{queue: workqueue.New(workqueue.Config[types.NamespacedName]{Name: "deployment", Clock: cfg.Clock,
		RateLimiter: cfg.RateLimiter, Metrics: cfg.Metrics})}
	c.loop = worker.Loop{Name: "deployment", KeyName: "deployment", Queue: c.queue, Workers: workers,
		MaxRetries: cfg.MaxRetries}
	if cfg.Reconciler != nil {
		c.loop.Sync = cfg.Reconciler.Reconcile
	}
	c.loop.Skipped, _ = cfg.Metrics.(worker.Skipper)
	if cfg.Reconciler == nil {
		pods, err := reconcile.FromCache(cfg.Pods.Cache())
		if err != nil {
			return nil, fmt.Errorf("deployment: %w", err)
		}
		t := writes.New(writes.Informers{Deployments: cfg.Deployments.Cache(), ReplicaSets: cfg.ReplicaSets.Cache()},
			cfg.Client.GetReplicaSet)
		c.own, err = NewReconciler(ReconcilerConfig{Deployments: deployments, ReplicaSets: rss, Pods: pods,
			Live: cfg.Live, Client: writes.TrackDeployments(cfg.Client, t), Events: cfg.Events, Clock: cfg.Clock,
			EagerStatus: cfg.EagerStatus, FeatureGates: cfg.FeatureGates})
		if err != nil {
			return nil, err
		}
		c.loop.Sync = c.own.Reconcile
		c.loop.Skip = func(ctx context.Context, key types.NamespacedName) (context.Context, bool, error) {
			behind, err := t.Behind(ctx, key)
			return writes.Syncing(ctx, key), behind, err
		}
	}
	rules := EventRules{Deployments: deployments, ReplicaSets: rss}
	add := func(es []reconcile.Enqueue) { worker.Enqueue(c.queue, cfg.BatchPeriod, es) }
	// The queue is served once every handler has seen its informer's
	// first list; see workqueue.Queue.Serve.
	synced, done := worker.WhenSynced(3, c.queue, workers)
	c.synced = done
	ctx := context.Background()
	if _, err := cfg.Deployments.AddHandler(informer.Handler[*appsv1.Deployment]{
		OnAdd:    func(d *appsv1.Deployment) { add(rules.DeploymentAdded(ctx, d)) },
		OnUpdate: func(old, cur *appsv1.Deployment) { add(rules.DeploymentUpdated(ctx, old, cur)) },
		OnDelete: func(d informer.Deleted[*appsv1.Deployment]) { add(rules.DeploymentDeleted(ctx, d.Obj)) },
		OnSynced: synced,
	}); err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	if _, err := cfg.ReplicaSets.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
		OnAdd:    func(rs *appsv1.ReplicaSet) { add(rules.ReplicaSetAdded(ctx, rs)) },
		OnUpdate: func(old, cur *appsv1.ReplicaSet) { add(rules.ReplicaSetUpdated(ctx, old, cur)) },
		OnDelete: func(d informer.Deleted[*appsv1.ReplicaSet]) { add(rules.ReplicaSetDeleted(ctx, d.Obj)) },
		OnSynced: synced,
	}); err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	if _, err := cfg.Pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnDelete: func(d informer.Deleted[*corev1.Pod]) { add(rules.PodDeleted(ctx, d.Obj)) },
		OnSynced: synced,
	}); err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	return c, nil
}

// Reconciler returns the controller's own Reconciler, or nil when
// ControllerConfig.Reconciler replaced it.
func (c *Controller) Reconciler() *Reconciler { return c.own }

// Run waits until the handlers have seen the informers' initial lists,
// then runs the workers until ctx is done; keys still queued then are
// dropped without a sync. It then shuts the queue down, waits for the
// syncs in progress and returns nil, as replicaset's Controller.Run does.
// Call it once. The logger comes from ctx (logr.FromContextOrDiscard).
func (c *Controller) Run(ctx context.Context) error {
	return c.runCalls.Do(func() error {
		c.loop.Run(ctx, c.synced)
		return nil
	}, errors.New("deployment: Controller.Run called twice"))
}
