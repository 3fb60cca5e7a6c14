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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// DefaultMaxRetries is how many times a failing Deployment is retried
// before it is dropped until its next change (upstream maxRetries).
const DefaultMaxRetries = 15

// Interface is what a [Controller] worker calls for each key;
// [*Reconciler] implements it.
type Interface interface {
	Reconcile(ctx context.Context, key types.NamespacedName) (Result, error)
}

// ReconcileFunc adapts a function to [Interface].
type ReconcileFunc func(ctx context.Context, key types.NamespacedName) (Result, error)

// Reconcile calls f(ctx, key).
func (f ReconcileFunc) Reconcile(ctx context.Context, key types.NamespacedName) (Result, error) {
	return f(ctx, key)
}

var (
	_ Interface = (*Reconciler)(nil)
	_ Interface = ReconcileFunc(nil)
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
	Reconciler Interface
	// Client, Live and Events configure the default Reconciler (see its
	// fields); Client is required when Reconciler is nil.
	Client Client
	Live   DeploymentGetter
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
	// Logger receives errors and dropped keys; the zero Logger discards.
	Logger logr.Logger
	// Metrics receives the work queue's measurements (depth, latency,
	// work duration, retries); nil takes none.
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
}

// Controller is the Deployment controller: informer events become keys in
// a work queue (upstream's handler rules), and workers reconcile them.
type Controller struct {
	cfg      ControllerConfig
	queue    *workqueue.Queue[types.NamespacedName]
	rec      Interface
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
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	c := &Controller{cfg: cfg, rec: cfg.Reconciler, synced: make(chan struct{}),
		queue: workqueue.New(workqueue.Config[types.NamespacedName]{Name: "deployment", Clock: cfg.Clock, RateLimiter: cfg.RateLimiter,
			Metrics: cfg.Metrics})}
	if c.rec == nil {
		rsCache, err := NewReplicaSetCache(cfg.ReplicaSets.Cache())
		if err != nil {
			return nil, err
		}
		c.tracker = &writeTracker{deployments: cfg.Deployments.Cache(), replicaSets: cfg.ReplicaSets.Cache(),
			live: cfg.Client.GetReplicaSet}
		c.rec = &Reconciler{Deployments: cfg.Deployments.Cache(), ReplicaSets: rsCache, Pods: cfg.Pods.Cache(),
			Live: cfg.Live, Client: trackingClient{Client: cfg.Client, t: c.tracker}, Events: cfg.Events, Clock: cfg.Clock,
			EagerStatus: cfg.EagerStatus}
	}
	h := handlers{deployments: cfg.Deployments.Cache(), replicaSets: cfg.ReplicaSets.Cache(), enqueue: c.queue.Add, later: c.queue.Add}
	if cfg.BatchPeriod > 0 {
		// The queue keeps the earliest deadline of a key: the first event
		// of a burst sets the time of the one sync for all of it.
		h.later = func(key types.NamespacedName) { c.queue.AddAfter(key, cfg.BatchPeriod) }
	}
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

// Run waits until the handlers have seen the informers' initial lists,
// then runs the workers until ctx is done. It then shuts the queue down,
// waits for the syncs in progress and returns ctx's error. Call it once.
func (c *Controller) Run(ctx context.Context) error {
	err := errors.New("deployment: Controller.Run called twice")
	c.runCalls.Do(func() { err = c.run(ctx) })
	return err
}

func (c *Controller) run(ctx context.Context) error {
	defer c.queue.ShutDown()
	select {
	case <-c.synced: // every handler has seen its informer's first list
	case <-ctx.Done():
		return ctx.Err()
	}
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return ctx.Err()
}

// processNext syncs one key; false means the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
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
	case errors.Is(err, ErrTerminal):
		c.cfg.Logger.Error(err, "Not retrying deployment", "deployment", key)
		c.queue.Forget(key)
	case c.queue.NumRequeues(key) < c.cfg.MaxRetries:
		c.cfg.Logger.V(2).Info("Error syncing deployment", "deployment", key, "err", err)
		c.queue.AddRateLimited(key)
	default:
		c.cfg.Logger.Error(err, "Dropping deployment out of the queue", "deployment", key)
		c.queue.Forget(key)
	}
	return true
}

// handlers maps informer events to Deployment keys (upstream's
// add/update/delete handlers).
type handlers struct {
	deployments *informer.Cache[*appsv1.Deployment]
	replicaSets *informer.Cache[*appsv1.ReplicaSet]
	enqueue     func(types.NamespacedName)
	later       func(types.NamespacedName) // enqueue after the batch period
}

func (h handlers) deploymentHandler() informer.Handler[*appsv1.Deployment] {
	return informer.Handler[*appsv1.Deployment]{
		OnAdd:    func(d *appsv1.Deployment) { h.enqueue(keyOf(d)) },
		OnUpdate: func(_, d *appsv1.Deployment) { h.enqueue(keyOf(d)) }, // always, resyncs included
		OnDelete: func(d informer.Deleted[*appsv1.Deployment]) { h.enqueue(d.Key) },
	}
}

func (h handlers) replicaSetHandler() informer.Handler[*appsv1.ReplicaSet] {
	return informer.Handler[*appsv1.ReplicaSet]{
		OnAdd: func(rs *appsv1.ReplicaSet) {
			if rs.DeletionTimestamp != nil {
				h.enqueueOwner(rs.Namespace, metav1.GetControllerOfNoCopy(rs))
				return
			}
			if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
				h.enqueueOwner(rs.Namespace, ref)
				return
			}
			h.enqueueSelecting(rs)
		},
		OnUpdate: func(old, cur *appsv1.ReplicaSet) {
			if old.ResourceVersion == cur.ResourceVersion {
				return // a resync
			}
			oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
			refChanged := !refEqual(oldRef, curRef)
			if refChanged && oldRef != nil {
				h.enqueueOwner(old.Namespace, oldRef)
			}
			if curRef != nil {
				if !refChanged && old.Generation == cur.Generation && labels.Equals(old.Labels, cur.Labels) &&
					(old.DeletionTimestamp == nil) == (cur.DeletionTimestamp == nil) {
					// The status (or annotations) only: batched.
					if d := h.resolve(cur.Namespace, curRef); d != nil {
						h.later(keyOf(d))
					}
					return
				}
				h.enqueueOwner(cur.Namespace, curRef)
				return
			}
			if refChanged || !labels.Equals(old.Labels, cur.Labels) {
				h.enqueueSelecting(cur)
			}
		},
		OnDelete: func(d informer.Deleted[*appsv1.ReplicaSet]) {
			h.enqueueOwner(d.Obj.Namespace, metav1.GetControllerOfNoCopy(d.Obj))
		},
	}
}

// podHandler requeues a Recreate Deployment when one of its pods is
// deleted (v1.37: on every deletion), so it can create the new
// ReplicaSet once the old pods are gone.
func (h handlers) podHandler() informer.Handler[*corev1.Pod] {
	return informer.Handler[*corev1.Pod]{
		OnDelete: func(del informer.Deleted[*corev1.Pod]) {
			ref := metav1.GetControllerOfNoCopy(del.Obj)
			if ref == nil || ref.Kind != "ReplicaSet" {
				return
			}
			rs, err := h.replicaSets.Get(types.NamespacedName{Namespace: del.Obj.Namespace, Name: ref.Name})
			if err != nil || rs.UID != ref.UID {
				return
			}
			if d := h.resolve(rs.Namespace, metav1.GetControllerOfNoCopy(rs)); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
				h.later(keyOf(d))
			}
		},
	}
}

// resolve returns the Deployment a controller reference points to, if it
// is in the cache with the same UID (upstream resolveControllerRef).
func (h handlers) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref == nil || ref.Kind != controllerKind.Kind {
		return nil
	}
	d, err := h.deployments.Get(types.NamespacedName{Namespace: namespace, Name: ref.Name})
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

func (h handlers) enqueueOwner(namespace string, ref *metav1.OwnerReference) {
	if d := h.resolve(namespace, ref); d != nil {
		h.enqueue(keyOf(d))
	}
}

// enqueueSelecting enqueues every Deployment of rs's namespace whose
// non-empty selector matches rs's labels (upstream
// GetDeploymentsForReplicaSet); a ReplicaSet without labels matches none.
func (h handlers) enqueueSelecting(rs *appsv1.ReplicaSet) {
	if len(rs.Labels) == 0 {
		return
	}
	ds, err := h.deployments.List(rs.Namespace, labels.Everything())
	if err != nil {
		return
	}
	for _, d := range ds {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		h.enqueue(keyOf(d))
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

func refEqual(a, b *metav1.OwnerReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		boolPtrEqual(a.Controller, b.Controller) && boolPtrEqual(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

func boolPtrEqual(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
