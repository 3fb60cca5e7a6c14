package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/internal/worker"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/shard"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// InformerOptions configures [NewInformerControllers]. The zero value is
// kube-controller-manager's configuration.
type InformerOptions struct {
	// Workers is the number of concurrent syncs of each controller; 0
	// means 5.
	Workers int
	// Grace lets writes in flight at shutdown finish (see
	// [DeploymentClient.Grace]); 0 means 10 s.
	Grace time.Duration
	// EagerStatus writes statuses with upstream's timing (see
	// deployment.ReconcilerConfig.EagerStatus).
	EagerStatus bool
	// FeatureGates are kube-controller-manager's feature gates both
	// controllers consult (see package features); the zero value is
	// v1.37's defaults.
	FeatureGates features.Gates
	// Shard restricts the controllers to the namespaces whose names hash
	// into the set's ranges (package shard): their handlers ignore the
	// events of other namespaces, so that N processes with disjoint sets
	// (shard.Split) share the cluster. The zero Set means all. The
	// factory is yours: build it with [ShardTweak] of the same set to
	// have kube-apiserver (with its ShardedListAndWatch gate on) send
	// only the set's objects; without, the caches hold every object. A
	// static set does not move between processes: for that, run the
	// [Operator] with [Sharding].
	Shard shard.Set
}

// ShardTweak is the factory option that asks the API server for the
// objects of set's namespaces only (metav1.ListOptions.ShardSelector on
// every list and watch of the factory's informers):
//
//	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, kube.ShardTweak(set))
//	ctl, err := kube.NewInformerControllers(factory, cs, kube.InformerOptions{Shard: set})
//
// It applies to every informer of the factory: use a factory of its own
// for the controllers (a shard selector on the namespace also filters
// cluster-scoped objects, whose namespace is "").
func ShardTweak(set shard.Set) informers.SharedInformerOption {
	sel := set.Selector()
	return informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.ShardSelector = sel })
}

// InformerControllers runs ctrlkit's Deployment and ReplicaSet controllers
// beside client-go's shared informers: they read the factory's stores
// (through [FromInformer], which adds the indexes they read by), register
// upstream's event-handler rules on its informers (with the ReplicaSet
// expectation observers), write with a clientset and record events through
// client-go's broadcaster. Wiring both:
//
//	factory := informers.NewSharedInformerFactory(cs, 0)
//	ctl, err := kube.NewInformerControllers(factory, cs, kube.InformerOptions{})
//	if err != nil {
//		return err
//	}
//	factory.Start(ctx.Done())
//	return ctl.Run(ctx)
//
// Unlike [Operator] and the packaged controllers it does not wait for the
// controllers' own writes to reach the stores before syncing again: a sync
// on a stale copy fails with Conflict and is retried, as upstream's.
type InformerControllers struct {
	cs       kubernetes.Interface
	opts     InformerOptions
	synced   []cache.InformerSynced
	ds       *InformerReader[*appsv1.Deployment]
	rss      *InformerReader[*appsv1.ReplicaSet]
	pods     *InformerReader[*corev1.Pod]
	exp      *replicaset.Expectations
	dQueue   *workqueue.Queue[types.NamespacedName]
	rsQueue  *workqueue.Queue[types.NamespacedName]
	runCalls sync.Once
}

// NewInformerControllers registers the controllers' indexes and event
// handlers on factory's Deployment, ReplicaSet and pod informers. Call it
// before factory.Start. It starts nothing.
func NewInformerControllers(factory informers.SharedInformerFactory, cs kubernetes.Interface, opts InformerOptions) (*InformerControllers, error) {
	switch {
	case factory == nil || cs == nil:
		return nil, errors.New("kube: NewInformerControllers needs a factory and a clientset")
	case opts.Workers < 0:
		return nil, fmt.Errorf("kube: InformerOptions.Workers is negative (%d)", opts.Workers)
	}
	if opts.Workers == 0 {
		opts.Workers = 5
	}
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	dInf := factory.Apps().V1().Deployments().Informer()
	rsInf := factory.Apps().V1().ReplicaSets().Informer()
	podInf := factory.Core().V1().Pods().Informer()
	c := &InformerControllers{cs: cs, opts: opts, exp: &replicaset.Expectations{},
		dQueue:  workqueue.New(workqueue.Config[types.NamespacedName]{Name: "deployment"}),
		rsQueue: workqueue.New(workqueue.Config[types.NamespacedName]{Name: "replicaset"}),
	}
	var err error
	if c.ds, err = FromInformer[*appsv1.Deployment](dInf, appsv1.Resource("deployments")); err != nil {
		return nil, err
	}
	if c.rss, err = FromInformer[*appsv1.ReplicaSet](rsInf, appsv1.Resource("replicasets")); err != nil {
		return nil, err
	}
	if c.pods, err = FromInformer[*corev1.Pod](podInf, corev1.Resource("pods")); err != nil {
		return nil, err
	}
	ctx := context.Background()
	dRules := deployment.EventRules{Deployments: c.ds, ReplicaSets: c.rss}
	rsRules := replicaset.EventRules{ReplicaSets: c.rss}
	keep := func(es []reconcile.Enqueue) []reconcile.Enqueue {
		if opts.Shard.IsZero() {
			return es
		}
		out := es[:0:0]
		for _, e := range es {
			if opts.Shard.ContainsNamespace(e.Key.Namespace) {
				out = append(out, e)
			}
		}
		return out
	}
	dq := func(es []reconcile.Enqueue) { enqueue(c.dQueue, keep(es)) }
	rsq := func(es []reconcile.Enqueue, obs []replicaset.Observation) {
		c.exp.Observe(obs...) // before the keys: the syncs must see them
		enqueue(c.rsQueue, keep(es))
	}
	regs := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{dInf, handlers(ctx, dRules.DeploymentAdded, dRules.DeploymentUpdated, dRules.DeploymentDeleted, dq)},
		{rsInf, handlers(ctx, dRules.ReplicaSetAdded, dRules.ReplicaSetUpdated, dRules.ReplicaSetDeleted, dq)},
		{podInf, handlers(ctx, nil, nil, dRules.PodDeleted, dq)},
		{rsInf, handlers2(ctx, rsRules.ReplicaSetAdded, rsRules.ReplicaSetUpdated, rsRules.ReplicaSetDeleted, rsq)},
		{podInf, handlers2(ctx, rsRules.PodAdded, rsRules.PodUpdated, rsRules.PodDeleted, rsq)},
	}
	for _, r := range regs {
		reg, err := r.inf.AddEventHandler(r.h)
		if err != nil {
			return nil, fmt.Errorf("kube: %w", err)
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

// Run waits until the informers have synced and the handlers have seen
// their contents, then runs both controllers until ctx is done; it then
// stops handing out work, lets the syncs in progress finish, flushes the
// events and returns nil. The logger comes from ctx. Call it once.
func (c *InformerControllers) Run(ctx context.Context) error {
	err := errors.New("kube: InformerControllers.Run called twice")
	c.runCalls.Do(func() { err = c.run(ctx) })
	return err
}

func (c *InformerControllers) run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	defer c.dQueue.ShutDown()
	defer c.rsQueue.ShutDown()
	events := StartEvents(context.WithoutCancel(ctx), c.cs)
	defer events.Shutdown()
	dr, err := deployment.NewReconciler(deployment.ReconcilerConfig{
		Deployments: c.ds, ReplicaSets: c.rss, Pods: c.pods, Live: LiveDeployments(c.cs, c.opts.Grace),
		Client: DeploymentClient{Clientset: c.cs, Grace: c.opts.Grace}, Events: events.Deployment(),
		EagerStatus: c.opts.EagerStatus, FeatureGates: c.opts.FeatureGates,
	})
	if err != nil {
		return err
	}
	rr, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
		ReplicaSets: c.rss, Pods: c.pods, Client: ReplicaSetClient{Clientset: c.cs, Grace: c.opts.Grace},
		Events: events.ReplicaSet(), Expectations: c.exp, EagerStatus: c.opts.EagerStatus,
		FeatureGates: c.opts.FeatureGates,
	})
	if err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return nil // ctx ended first
	}
	var wg sync.WaitGroup
	for _, l := range []*worker.Loop{
		{Name: "deployment", KeyName: "deployment", Queue: c.dQueue, Workers: c.opts.Workers, Sync: dr.Reconcile},
		{Name: "replicaset", KeyName: "replicaSet", Queue: c.rsQueue, Workers: c.opts.Workers, Sync: rr.Reconcile},
	} {
		wg.Go(func() { l.Run(logr.NewContext(ctx, log.WithName(l.Name)), nil) })
	}
	wg.Wait()
	return nil
}

func enqueue(q *workqueue.Queue[types.NamespacedName], es []reconcile.Enqueue) {
	worker.Enqueue(q, 0, es)
}

// handlers adapts event rules to a client-go event handler: objects of
// another type are ignored, tombstones (cache.DeletedFinalStateUnknown)
// are unwrapped to the last known state they carry.
func handlers[T any](ctx context.Context,
	add func(context.Context, T) []reconcile.Enqueue,
	update func(context.Context, T, T) []reconcile.Enqueue,
	del func(context.Context, T) []reconcile.Enqueue,
	sink func([]reconcile.Enqueue),
) cache.ResourceEventHandler {
	return handlers2(ctx, noObs(add), noObs2(update), noObs(del),
		func(es []reconcile.Enqueue, _ []replicaset.Observation) { sink(es) })
}

func handlers2[T any](ctx context.Context,
	add func(context.Context, T) ([]reconcile.Enqueue, []replicaset.Observation),
	update func(context.Context, T, T) ([]reconcile.Enqueue, []replicaset.Observation),
	del func(context.Context, T) ([]reconcile.Enqueue, []replicaset.Observation),
	sink func([]reconcile.Enqueue, []replicaset.Observation),
) cache.ResourceEventHandler {
	var h cache.ResourceEventHandlerFuncs
	if add != nil {
		h.AddFunc = func(obj any) {
			if t, ok := obj.(T); ok {
				sink(add(ctx, t))
			}
		}
	}
	if update != nil {
		h.UpdateFunc = func(oldObj, newObj any) {
			old, ok1 := oldObj.(T)
			cur, ok2 := newObj.(T)
			if ok1 && ok2 {
				sink(update(ctx, old, cur))
			}
		}
	}
	if del != nil {
		h.DeleteFunc = func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if t, ok := obj.(T); ok {
				sink(del(ctx, t))
			}
		}
	}
	return h
}

func noObs[T any](f func(context.Context, T) []reconcile.Enqueue) func(context.Context, T) ([]reconcile.Enqueue, []replicaset.Observation) {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, t T) ([]reconcile.Enqueue, []replicaset.Observation) { return f(ctx, t), nil }
}

func noObs2[T any](f func(context.Context, T, T) []reconcile.Enqueue) func(context.Context, T, T) ([]reconcile.Enqueue, []replicaset.Observation) {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, a, b T) ([]reconcile.Enqueue, []replicaset.Observation) {
		return f(ctx, a, b), nil
	}
}
