package replicaset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
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
	// means the wall clock.
	Clock clock.Clock
	// Workers is the number of ReplicaSets synced in parallel; 0 means 1.
	Workers int
	// BurstReplicas caps creations or deletions per sync; 0 means
	// [BurstReplicas].
	BurstReplicas int
	// RateLimiter spaces out the retries of failing syncs; nil means the
	// workqueue default (per-item exponential backoff and an overall
	// token bucket).
	RateLimiter workqueue.RateLimiter[types.NamespacedName]
	// Metrics receives the work queue's measurements (depth, latency,
	// work duration, retries); nil takes none.
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
	// events trigger; see [Config.EagerStatus].
	EagerStatus bool
}

// Controller is the ReplicaSet controller: informer event handlers feed a
// rate-limited workqueue of ReplicaSet keys, and workers sync each key with
// a [Reconciler] (upstream ReplicaSetController). Create it with
// [NewController] and call Run once.
type Controller struct {
	rsInf   *informer.Informer[*appsv1.ReplicaSet]
	podInf  *informer.Informer[*corev1.Pod]
	rss     *informer.Cache[*appsv1.ReplicaSet]
	rec     *Reconciler
	queue   *workqueue.Queue[types.NamespacedName]
	workers int
	batch   time.Duration // pod events wait this long; see BatchPeriod

	// On a fake clock the controller is tracked work from NewController
	// until Run has registered its handlers: otherwise a simulation could
	// move time on, or find nothing to do, before Run's goroutine has
	// started (see clock.Source). gate opens when that work's turn comes.
	start     clock.Work
	gate      chan struct{}
	startOnce sync.Once
}

// NewController returns a controller for cfg. It adds an index of orphan
// pods to the pod informer's cache, and starts nothing. On a
// [clock.Fake] the controller counts as unfinished work until Run has
// registered its handlers, so that a simulation waits for Run's goroutine
// (as for informer.New): call Run for every controller you create there.
func NewController(cfg ControllerConfig) (*Controller, error) {
	switch {
	case cfg.ReplicaSets == nil:
		return nil, errors.New("replicaset: ControllerConfig.ReplicaSets is nil")
	case cfg.Pods == nil:
		return nil, errors.New("replicaset: ControllerConfig.Pods is nil")
	case cfg.Workers < 0:
		return nil, fmt.Errorf("replicaset: ControllerConfig.Workers is negative (%d)", cfg.Workers)
	}
	pods, err := NewPodCache(cfg.Pods.Cache())
	if err != nil {
		return nil, err
	}
	clk := clock.OrReal(cfg.Clock)
	var client Client
	if cfg.Client != nil {
		client = trackingClient{Client: cfg.Client, rss: cfg.ReplicaSets.Cache()}
	}
	rec, err := NewReconciler(Config{
		ReplicaSets: cfg.ReplicaSets.Cache(), Pods: pods, Client: client,
		Events: cfg.Events, Clock: clk, BurstReplicas: cfg.BurstReplicas,
		EagerStatus: cfg.EagerStatus,
	})
	if err != nil {
		return nil, err
	}
	q := workqueue.New(workqueue.Config[types.NamespacedName]{
		Name: "replicaset", Clock: clk, RateLimiter: cfg.RateLimiter, Metrics: cfg.Metrics,
	})
	c := &Controller{
		rsInf: cfg.ReplicaSets, podInf: cfg.Pods, rss: cfg.ReplicaSets.Cache(), rec: rec,
		queue:   q,
		workers: max(cfg.Workers, 1),
		batch:   max(cfg.BatchPeriod, 0),
		gate:    make(chan struct{}),
	}
	var now bool
	c.start, now = clock.NewSource(clk, "replicaset: controller not started").Start(func() { close(c.gate) })
	if now {
		close(c.gate)
	}
	return c, nil
}

// started finishes the work of the controller's start, once.
func (c *Controller) started() { c.startOnce.Do(c.start.Done) }

// Reconciler returns the controller's reconciler.
func (c *Controller) Reconciler() *Reconciler { return c.rec }

// Run registers the event handlers, waits until both informers have synced
// and the handlers have seen their contents, then syncs ReplicaSets with
// the configured number of workers until ctx ends. It then shuts the queue
// down, waits for the workers to return and removes its handlers. It
// returns nil after a normal shutdown, or an error if a handler could not
// be registered. Run must be called only once.
func (c *Controller) Run(ctx context.Context) (err error) {
	log := logr.FromContextOrDiscard(ctx).WithValues("controller", "replicaset")
	defer c.queue.ShutDown()
	defer c.started() // on every return; normally done below, once the handlers are in
	select {
	case <-c.gate:
	case <-ctx.Done():
		return nil
	}
	// The queue is served once both handlers have seen their informer's
	// first list; see workqueue.Queue.Serve.
	var left atomic.Int32
	left.Store(2)
	synced := func() {
		if left.Add(-1) == 0 {
			c.queue.Serve()
		}
	}
	rsReg, err := c.rsInf.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
		OnAdd: c.addRS, OnUpdate: c.updateRS, OnDelete: c.deleteRS, OnSynced: synced,
	})
	if err != nil {
		return fmt.Errorf("replicaset: %w", err)
	}
	podReg, err := c.podInf.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd: c.addPod, OnUpdate: c.updatePod, OnDelete: c.deletePod, OnSynced: synced,
	})
	if err != nil {
		return errors.Join(fmt.Errorf("replicaset: %w", err), c.rsInf.RemoveHandler(rsReg))
	}
	defer func() {
		err = errors.Join(err, c.rsInf.RemoveHandler(rsReg), c.podInf.RemoveHandler(podReg))
	}()
	// The handlers' work (the informers' contents, as adds) is tracked
	// from here on.
	c.started()

	for _, synced := range []<-chan struct{}{c.rsInf.Synced(), c.podInf.Synced(), rsReg.Synced(), podReg.Synced()} {
		select {
		case <-synced:
		case <-ctx.Done():
			return nil
		}
	}
	log.Info("Starting workers", "workers", c.workers)
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for c.processNext(ctx, log) {
			}
		})
	}
	<-ctx.Done()
	log.Info("Shutting down")
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// processNext syncs one key; it returns false once the queue is shut down.
func (c *Controller) processNext(ctx context.Context, log logr.Logger) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		return true // shutting down: drain without syncing
	}
	if c.rss.Behind(key) {
		// This process replaced the cached version (our status write, or a
		// Deployment controller's scale); its event will enqueue the key.
		c.queue.Forget(key)
		return true
	}
	res, err := c.rec.Reconcile(ctx, key)
	if err != nil {
		log.Error(err, "Sync failed; will retry", "replicaSet", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	if res.RequeueAfter > 0 {
		c.queue.AddAfter(key, res.RequeueAfter)
	}
	return true
}

func rsKey(rs *appsv1.ReplicaSet) types.NamespacedName {
	return types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
}

func (c *Controller) addRS(rs *appsv1.ReplicaSet) { c.queue.Add(rsKey(rs)) }

// updateRS enqueues the ReplicaSet on every update; a changed UID means it
// was deleted and recreated under the same name, so the old one's
// expectations go.
func (c *Controller) updateRS(old, cur *appsv1.ReplicaSet) {
	if old.UID != cur.UID {
		c.deleteRS(informer.Deleted[*appsv1.ReplicaSet]{Obj: old, Key: rsKey(old), FinalStateUnknown: true})
	}
	c.queue.Add(rsKey(cur))
}

func (c *Controller) deleteRS(d informer.Deleted[*appsv1.ReplicaSet]) {
	c.rec.Expectations().Delete(d.Key)
	c.queue.Add(d.Key)
}

// resolve returns the ReplicaSet ref points to in namespace, or nil when it
// is not a ReplicaSet, not in the cache, or a different object (UID).
func (c *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref.Kind != controllerKindName {
		return nil
	}
	rs, err := c.rss.Get(types.NamespacedName{Namespace: namespace, Name: ref.Name})
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// enqueueMatching enqueues every ReplicaSet that selects the orphan pod.
// podEvent enqueues a ReplicaSet for a pod event, after the batch period.
// The work queue keeps the earliest deadline of a key, so the first event
// of a burst sets the time of the one sync for all of it.
func (c *Controller) podEvent(key types.NamespacedName) {
	if c.batch > 0 {
		c.queue.AddAfter(key, c.batch)
		return
	}
	c.queue.Add(key)
}

func (c *Controller) enqueueMatching(pod *corev1.Pod) {
	rss, err := c.rss.List(pod.Namespace, labels.Everything())
	if err != nil {
		return // the cache lists without failing; nothing to match
	}
	for _, rs := range PodReplicaSets(pod, rss) {
		c.podEvent(rsKey(rs))
	}
}

// addPod counts a new controlled pod as an observed creation, and offers an
// orphan to every ReplicaSet that selects it. A pod that arrives already
// being deleted is a deletion, not a creation.
func (c *Controller) addPod(pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil {
		c.podDeleted(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if rs := c.resolve(pod.Namespace, ref); rs != nil {
			c.rec.Expectations().CreationObserved(rsKey(rs))
			c.podEvent(rsKey(rs))
		}
		return
	}
	c.enqueueMatching(pod)
}

// updatePod wakes the ReplicaSets a pod change concerns: a deletion
// timestamp counts as the deletion; a changed controller wakes the old
// owner too; a pod turning ready wakes its owner again after
// minReadySeconds; an orphan whose labels or owner changed is offered to
// every ReplicaSet that selects it. Resyncs (same resourceVersion) are
// ignored.
func (c *Controller) updatePod(old, cur *corev1.Pod) {
	if cur.ResourceVersion == old.ResourceVersion {
		return
	}
	labelsChanged := !reflect.DeepEqual(cur.Labels, old.Labels)
	if cur.DeletionTimestamp != nil {
		c.podDeleted(cur)
		if labelsChanged {
			c.podDeleted(old)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if rs := c.resolve(old.Namespace, oldRef); rs != nil {
			c.podEvent(rsKey(rs))
		}
	}
	if curRef != nil {
		rs := c.resolve(cur.Namespace, curRef)
		if rs == nil {
			return
		}
		c.podEvent(rsKey(rs))
		if !IsPodReady(old) && IsPodReady(cur) && rs.Spec.MinReadySeconds > 0 {
			c.queue.AddAfter(rsKey(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second)
		}
		return
	}
	if labelsChanged || refChanged {
		c.enqueueMatching(cur)
	}
}

func (c *Controller) deletePod(d informer.Deleted[*corev1.Pod]) {
	if d.Obj != nil {
		c.podDeleted(d.Obj)
	}
}

// podDeleted counts the deletion of a controlled pod (once per pod UID)
// and wakes its owner. Orphans concern nobody.
func (c *Controller) podDeleted(pod *corev1.Pod) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return
	}
	if rs := c.resolve(pod.Namespace, ref); rs != nil {
		c.rec.Expectations().DeletionObserved(rsKey(rs), pod.UID)
		c.podEvent(rsKey(rs))
	}
}

// orphanIndex files pods without a controller under their namespace.
const orphanIndex = "replicaset.ctrlkit/orphans"

// PodCache adapts an informer pod cache to [PodLister] and
// [PodsByController], so that a [Reconciler] reads a ReplicaSet's pods and
// the namespace's orphans through indexes instead of listing the
// namespace. Create it with [NewPodCache].
type PodCache struct {
	c *informer.Cache[*corev1.Pod]
}

// NewPodCache returns a PodCache over c, adding an index of orphan pods to
// c unless it is already there.
func NewPodCache(c *informer.Cache[*corev1.Pod]) (*PodCache, error) {
	if !slices.Contains(c.IndexNames(), orphanIndex) {
		err := c.AddIndex(orphanIndex, func(p *corev1.Pod) ([]string, error) {
			if metav1.GetControllerOfNoCopy(p) != nil {
				return nil, nil
			}
			return []string{p.Namespace}, nil
		})
		if err != nil && !slices.Contains(c.IndexNames(), orphanIndex) {
			return nil, fmt.Errorf("replicaset: %w", err)
		}
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
	return &PodCache{c: c}, nil
}

// hashIndex files pods by namespace and pod-template-hash label.
const hashIndex = "replicaset.ctrlkit/pod-template-hash"

// List lists the cached pods of namespace that match selector. A selector
// that pins pod-template-hash to one value (every Deployment's ReplicaSet
// has one) is answered from an index of that label, filtered by the whole
// selector: the same pods, without a scan of the namespace.
func (p *PodCache) List(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
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
func (p *PodCache) ListByController(namespace string, uid types.UID) ([]*corev1.Pod, error) {
	if uid == "" {
		return p.c.ByIndex(orphanIndex, namespace)
	}
	return p.c.ByIndex(informer.IndexControllerUID, string(uid))
}

var (
	_ PodLister        = (*PodCache)(nil)
	_ PodsByController = (*PodCache)(nil)
	_ ReplicaSetReader = (*informer.Cache[*appsv1.ReplicaSet])(nil)
)
