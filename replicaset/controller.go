package replicaset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/worker"
	"github.com/ctrlkit/ctrlkit/internal/writes"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// ControllerConfig configures a [Controller]. ReplicaSets, Pods and Client
// are required; every other field has a useful zero value.
type ControllerConfig struct {
	// ReplicaSets and Pods are the informers the controller reads from and
	// listens to. The caller runs them; they may be shared with others.
	ReplicaSets *informer.Informer[*appsv1.ReplicaSet]
	Pods        *informer.Informer[*corev1.Pod]
	// Client makes every write.
	Client Client
	// Events receives events about ReplicaSets; nil discards them.
	Events EventRecorder
	// Clock drives the queue's delays and the expectations' expiry; nil
	// means the informers' clock; another clock than theirs is an error
	// when theirs is a *clock.Fake (the controller would take no part in
	// the simulation).
	Clock clock.Clock
	// Workers is the number of ReplicaSets synced in parallel; 0 means 1
	// (kube-controller-manager runs 5).
	Workers int
	// MaxRetries bounds the rate-limited retries of a failing key, after
	// which it is dropped until its next event; 0 means no bound, as
	// upstream.
	MaxRetries int
	// BurstReplicas caps creations or deletions per sync; 0 means
	// [BurstReplicas].
	BurstReplicas int
	// RateLimiter spaces out the retries of failing syncs; nil means the
	// workqueue default (per-item exponential backoff and an overall
	// token bucket).
	RateLimiter workqueue.RateLimiter[types.NamespacedName]
	// Metrics receives the work queue's measurements (depth, latency,
	// work duration, retries); nil takes none. If it also has a method
	// SyncSkipped() it is told of each sync skipped while the cache lags
	// behind this process's own writes.
	Metrics workqueue.Metrics
	// BatchPeriod delays the sync a pod event triggers by this much, and
	// the pod events of the ReplicaSet that arrive meanwhile join that
	// sync: a burst of them (the pods of one step becoming ready together)
	// costs one sync and one status write instead of one each. The price
	// is latency: every step of a rollout that waits for pods waits the
	// period longer. ReplicaSet events still sync at once (and take the
	// pending pod events along). Zero syncs at once on every event, like
	// upstream; kube-controller-manager batches EndpointSlice updates the
	// same way (--endpointslice-updates-batch-period).
	BatchPeriod time.Duration
	// EagerStatus writes the status in the sync that creates or deletes
	// pods too, as upstream does, instead of leaving it to the sync their
	// events trigger; see [ReconcilerConfig.EagerStatus].
	EagerStatus bool
	// FeatureGates are kube-controller-manager's feature gates; the zero
	// value is v1.37's defaults (see [ReconcilerConfig.FeatureGates]).
	// With StaleControllerConsistencyReplicaSet off the controller does
	// not wait for its own writes: it syncs a ReplicaSet from whatever
	// version its cache holds, as upstream does then.
	// Reconciler().SetFeatureGates switches them while it runs.
	FeatureGates features.Gates
	// TrustExpiredExpectations is upstream's behaviour on an expired
	// expectation (kubernetes#129795); see
	// [ReconcilerConfig.TrustExpiredExpectations].
	TrustExpiredExpectations bool
	// ReplaceRejectedPodsAtOnce is upstream's pace of replacing pods the
	// kubelet rejects (kubernetes#72593); see
	// [ReconcilerConfig.ReplaceRejectedPodsAtOnce].
	ReplaceRejectedPodsAtOnce bool
}

// Controller is the ReplicaSet controller: informer event handlers feed a
// rate-limited workqueue of ReplicaSet keys, and workers sync each key with
// a [Reconciler] (upstream ReplicaSetController). Create it with
// [NewController] and call Run once.
type Controller struct {
	rsInf    *informer.Informer[*appsv1.ReplicaSet]
	podInf   *informer.Informer[*corev1.Pod]
	rec      *Reconciler
	loop     worker.Loop
	rsReg    *informer.Registration
	podReg   *informer.Registration
	ready    <-chan struct{}                 // closed once both handlers have synced
	hctx     atomic.Pointer[context.Context] // Run's context, without its cancellation, for the handlers
	runCalls worker.Once
}

// NewController returns a controller for cfg. It adds an index of orphan
// pods to the pod informer's cache and registers its event handlers on the
// informers, and starts nothing.
func NewController(cfg ControllerConfig) (*Controller, error) {
	switch {
	case cfg.ReplicaSets == nil:
		return nil, errors.New("replicaset: ControllerConfig.ReplicaSets is nil")
	case cfg.Pods == nil:
		return nil, errors.New("replicaset: ControllerConfig.Pods is nil")
	}
	if err := worker.CheckConfig("replicaset: ControllerConfig", cfg.Workers, cfg.MaxRetries, cfg.BatchPeriod); err != nil {
		return nil, err
	}
	pods, err := NewPodCache(cfg.Pods.Cache())
	if err != nil {
		return nil, err
	}
	rss, err := reconcile.FromCache(cfg.ReplicaSets.Cache())
	if err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	clk, err := worker.Clock("replicaset: ControllerConfig", cfg.Clock, cfg.ReplicaSets.Clock(), cfg.Pods.Clock())
	if err != nil {
		return nil, err
	}
	marks := writes.Informers{ReplicaSets: cfg.ReplicaSets.Cache()}
	var client Client
	if cfg.Client != nil {
		client = writes.TrackReplicaSets(cfg.Client, marks)
	}
	rec, err := NewReconciler(ReconcilerConfig{
		ReplicaSets: rss, Pods: pods, Client: client,
		Events: cfg.Events, Clock: clk, BurstReplicas: cfg.BurstReplicas,
		EagerStatus: cfg.EagerStatus, FeatureGates: cfg.FeatureGates,
		TrustExpiredExpectations:  cfg.TrustExpiredExpectations,
		ReplaceRejectedPodsAtOnce: cfg.ReplaceRejectedPodsAtOnce,
	})
	if err != nil {
		return nil, err
	}
	q := workqueue.New(workqueue.Config[types.NamespacedName]{
		Name: "replicaset", Clock: clk, RateLimiter: cfg.RateLimiter, Metrics: cfg.Metrics,
	})
	c := &Controller{rsInf: cfg.ReplicaSets, podInf: cfg.Pods, rec: rec}
	c.loop = worker.Loop{Name: "replicaset", KeyName: "replicaSet", Queue: q, Workers: max(cfg.Workers, 1),
		MaxRetries: cfg.MaxRetries, Sync: rec.Reconcile,
		Skip: func(ctx context.Context, key types.NamespacedName) (context.Context, bool, error) {
			// This process replaced the cached version (our status write, or
			// a Deployment controller's scale); its event will enqueue the
			// key.
			return ctx, rec.FeatureGates().Enabled(features.StaleControllerConsistencyReplicaSet) &&
				marks.Behind(ctx, writes.ReplicaSet, key), nil
		},
		// Upstream's consistency check fails the sync: it counts toward
		// the key's backoff.
		SkipsFail: true}
	c.loop.Skipped, _ = cfg.Metrics.(worker.Skipper)
	if err := c.register(EventRules{ReplicaSets: rss}, cfg.BatchPeriod); err != nil {
		return nil, err
	}
	return c, nil
}

// register adds the event handlers. They are added here rather than in
// Run so that no event can fall between the constructor and Run, and so
// that, on a fake clock, a simulation cannot move time on while Run's
// goroutine has yet to start. Once both handlers have seen their
// informer's first list, the workers are announced to the queue (see
// workqueue.Queue.Serve) and Run starts them.
func (c *Controller) register(rules EventRules, batch time.Duration) error {
	synced, ready := worker.WhenSynced(2, c.loop.Queue, c.loop.Workers)
	c.ready = ready
	// react records what an event rule observed, then enqueues what it
	// asked for. Expectations go first: the sync an enqueue triggers must
	// see them.
	react := func(es []reconcile.Enqueue, obs []Observation) {
		c.rec.Expectations().Observe(obs...)
		worker.Enqueue(c.loop.Queue, batch, es)
	}
	var err error
	c.rsReg, err = c.rsInf.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
		OnAdd:    func(rs *appsv1.ReplicaSet) { react(rules.ReplicaSetAdded(c.handlerCtx(), rs)) },
		OnUpdate: func(old, cur *appsv1.ReplicaSet) { react(rules.ReplicaSetUpdated(c.handlerCtx(), old, cur)) },
		OnDelete: func(d informer.Deleted[*appsv1.ReplicaSet]) {
			react(rules.ReplicaSetDeleted(c.handlerCtx(), d.Obj))
		},
		OnSynced: synced,
	})
	if err != nil {
		return fmt.Errorf("replicaset: %w", err)
	}
	c.podReg, err = c.podInf.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod) { react(rules.PodAdded(c.handlerCtx(), p)) },
		OnUpdate: func(old, cur *corev1.Pod) { react(rules.PodUpdated(c.handlerCtx(), old, cur)) },
		OnDelete: func(d informer.Deleted[*corev1.Pod]) { react(rules.PodDeleted(c.handlerCtx(), d.Obj)) },
		OnSynced: synced,
	})
	if err != nil {
		return errors.Join(fmt.Errorf("replicaset: %w", err), c.rsInf.RemoveHandler(c.rsReg))
	}
	return nil
}

// handlerCtx is the context of the handlers' calls: Run's, without its
// cancellation (for its logger), or the background before Run.
func (c *Controller) handlerCtx() context.Context {
	if p := c.hctx.Load(); p != nil {
		return *p
	}
	return context.Background()
}

// Reconciler returns the controller's reconciler.
func (c *Controller) Reconciler() *Reconciler { return c.rec }

// Run waits until both informers have synced and the handlers (registered
// by NewController) have seen their contents, then syncs ReplicaSets with
// the configured number of workers until ctx ends; keys still queued then
// are dropped without a sync. It then shuts the queue down, waits for the
// workers to return and removes its handlers. It returns nil after a
// normal shutdown, or an error if a handler could not be removed. Run must
// be called only once. The logger comes from ctx
// (logr.FromContextOrDiscard).
func (c *Controller) Run(ctx context.Context) error {
	return c.runCalls.Do(func() error {
		hctx := context.WithoutCancel(ctx)
		c.hctx.Store(&hctx)
		c.loop.Run(ctx, c.ready)
		return errors.Join(c.rsInf.RemoveHandler(c.rsReg), c.podInf.RemoveHandler(c.podReg))
	}, errors.New("replicaset: Controller.Run called twice"))
}

func rsKey(rs *appsv1.ReplicaSet) types.NamespacedName {
	return types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
}

// PodCache adapts an informer pod cache to [reconcile.Lister] and
// [reconcile.ByController], so that a [Reconciler] reads a ReplicaSet's
// pods and the namespace's orphans through indexes instead of listing the
// namespace, and answers the selectors of a Deployment's ReplicaSets from
// an index of pod-template-hash. Create it with [NewPodCache].
type PodCache struct {
	orphans *reconcile.CacheReader[*corev1.Pod]
	c       *informer.Cache[*corev1.Pod]
}

// NewPodCache returns a PodCache over c, adding to c the indexes it reads
// unless they are there: [reconcile.FromCache]'s index of orphans and one
// of pod-template-hash.
func NewPodCache(c *informer.Cache[*corev1.Pod]) (*PodCache, error) {
	if c == nil {
		return nil, errors.New("replicaset: NewPodCache: the cache is nil")
	}
	orphans, err := reconcile.FromCache(c)
	if err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	if !slices.Contains(c.IndexNames(), hashIndex) {
		err := c.AddIndex(hashIndex, func(p *corev1.Pod) ([]string, error) {
			if h, ok := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
				return []string{p.Namespace + "/" + h}, nil
			}
			return nil, nil
		})
		if err != nil && !slices.Contains(c.IndexNames(), hashIndex) {
			return nil, fmt.Errorf("replicaset: %w", err)
		}
	}
	return &PodCache{orphans: orphans, c: c}, nil
}

// hashIndex files pods by namespace and pod-template-hash label.
const hashIndex = "replicaset.ctrlkit/pod-template-hash"

// List lists the cached pods of namespace that match selector. A selector
// that pins pod-template-hash to one value (every Deployment's ReplicaSet
// has one) is answered from an index of that label, filtered by the whole
// selector: the same pods, without a scan of the namespace.
func (p *PodCache) List(_ context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	if namespace != "" && selector != nil {
		if reqs, ok := selector.Requirements(); ok {
			for _, r := range reqs {
				if r.Key() != appsv1.DefaultDeploymentUniqueLabelKey || r.Values().Len() != 1 {
					continue
				}
				switch r.Operator() {
				case selection.Equals, selection.DoubleEquals, selection.In:
				default:
					continue
				}
				pods, err := p.c.ByIndex(hashIndex, namespace+"/"+r.Values().UnsortedList()[0])
				if err != nil {
					return nil, err
				}
				return slices.DeleteFunc(pods, func(pod *corev1.Pod) bool { return !selector.Matches(labels.Set(pod.Labels)) }), nil
			}
		}
	}
	return p.c.List(namespace, selector)
}

// ListByController lists the cached pods controlled by uid (any
// namespace; the Reconciler filters), or with an empty uid the orphans of
// namespace.
func (p *PodCache) ListByController(ctx context.Context, namespace string, uid types.UID) ([]*corev1.Pod, error) {
	return p.orphans.ListByController(ctx, namespace, uid)
}

var (
	_ reconcile.Lister[*corev1.Pod]       = (*PodCache)(nil)
	_ reconcile.ByController[*corev1.Pod] = (*PodCache)(nil)
)
