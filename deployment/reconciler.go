package deployment

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/internal/worker"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// ReplicaSetsByController is the optional extension of
// ReconcilerConfig.ReplicaSets through which a sync reads only the
// ReplicaSets its decision can depend on: those the Deployment controls,
// the namespace's orphans, and (only when the plan creates a ReplicaSet)
// the one that already holds the new name. Upstream lists the whole
// namespace on every sync, which makes n Deployments in one namespace cost
// O(n²); with this extension a sync costs what the Deployment owns. The
// decisions are the same; the one visible difference is the order of a
// sync's ownership patches: releases of owned ReplicaSets come before
// adoptions of orphans, where a full listing interleaves them in listing
// order (upstream's is a map's, unspecified). [reconcile.FromCache]
// implements it.
type ReplicaSetsByController interface {
	reconcile.ByController[*appsv1.ReplicaSet]
	reconcile.Getter[*appsv1.ReplicaSet]
}

// ReconcilerConfig configures a [Reconciler]. Deployments, ReplicaSets and
// Client are required; every other field has a useful zero value. The
// readers return shared, read-only objects (an informer cache, say): the
// Reconciler never modifies what they return.
type ReconcilerConfig struct {
	// Deployments reads Deployments, usually from an informer cache.
	Deployments reconcile.Getter[*appsv1.Deployment]
	// ReplicaSets lists ReplicaSets, usually from an informer cache. If it
	// also implements [ReplicaSetsByController], that index is used.
	ReplicaSets reconcile.Lister[*appsv1.ReplicaSet]
	// Pods lists the pods a ReplicaSet controls (ListByController with the
	// ReplicaSet's UID). Only Recreate Deployments need it; nil makes them
	// fail to sync.
	Pods reconcile.ByController[*corev1.Pod]
	// Live reads the Deployment from the API server, bypassing caches,
	// before ReplicaSets are adopted (a deleted or recreated Deployment
	// must not adopt). Nil means Deployments is used.
	Live reconcile.Getter[*appsv1.Deployment]
	// Client makes every write.
	Client Client
	// Events records events about Deployments; nil discards them.
	Events EventRecorder
	// Clock gives the time passed to Sync; nil means the real clock.
	Clock clock.PassiveClock
	// EagerStatus writes the status in every sync that changes it, as
	// upstream does. By default a sync whose only writes are ReplicaSet
	// scales leaves the status to the sync their events trigger; see
	// [Reconciler.Reconcile].
	EagerStatus bool
	// FeatureGates are kube-controller-manager's feature gates; the zero
	// value is v1.37's defaults. The Deployment controller consults
	// DeploymentReplicaSetTerminatingReplicas (off: the status's
	// terminatingReplicas is nil). [Reconciler.SetFeatureGates] switches
	// them on a running Reconciler.
	FeatureGates features.Gates
}

func (c *ReconcilerConfig) validate() error {
	switch {
	case c.Deployments == nil:
		return errors.New("deployment: ReconcilerConfig.Deployments is nil")
	case c.ReplicaSets == nil:
		return errors.New("deployment: ReconcilerConfig.ReplicaSets is nil")
	case c.Client == nil:
		return errors.New("deployment: ReconcilerConfig.Client is nil")
	}
	if err := c.FeatureGates.Validate(); err != nil {
		return fmt.Errorf("deployment: ReconcilerConfig.FeatureGates: %w", err)
	}
	return nil
}

// Reconciler syncs one Deployment per call: read a snapshot, [Sync],
// [WritePlan] (upstream DeploymentController.syncDeployment). Create it with
// [NewReconciler]. It holds no state between calls and is safe for
// concurrent use by several workers on different keys.
type Reconciler struct {
	cfg   ReconcilerConfig
	index ReplicaSetsByController // nil unless cfg.ReplicaSets implements it
	gates worker.Gates
}

// NewReconciler returns a Reconciler for cfg, or an error naming the first
// missing required field. It starts nothing.
func NewReconciler(cfg ReconcilerConfig) (*Reconciler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Live == nil {
		cfg.Live = cfg.Deployments
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	r := &Reconciler{cfg: cfg}
	r.index, _ = cfg.ReplicaSets.(ReplicaSetsByController)
	if err := r.gates.Store("deployment", cfg.FeatureGates); err != nil {
		return nil, err
	}
	return r, nil
}

// FeatureGates returns the feature gates the Reconciler decides with.
func (r *Reconciler) FeatureGates() features.Gates { return r.gates.Load() }

// SetFeatureGates switches the feature gates of the Reconciler: syncs that
// start afterwards decide with g, as upstream's controllers do with a gate
// switched in their process (a real kube-controller-manager takes its
// gates at start). An invalid setting is an error, and changes nothing.
func (r *Reconciler) SetFeatureGates(g features.Gates) error {
	return r.gates.Store("deployment", g)
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// Reconcile syncs the Deployment key names. A Deployment that no longer
// exists is not an error. Errors for which [reconcile.IsTerminal] holds
// must not be retried; others should be, with backoff. The logger comes
// from ctx (logr.FromContextOrDiscard): each sync logs "Started syncing
// deployment" and "Finished syncing deployment" (with its duration) at
// V(4), with upstream's key "deployment".
//
// One deliberate difference from upstream, unless ReconcilerConfig.EagerStatus is set: a
// sync whose only writes are ReplicaSet scales does not write the
// Deployment status. Each scale changes the ReplicaSet, so its event
// syncs the Deployment again; that sync decides the same status (Sync
// computes it as after the plan's writes, and the stored status it is
// compared with has not changed) or a later one, and writes it. A rolling
// update scales the new ReplicaSet up and the old ones down in
// consecutive syncs, so a chain of them now writes the status once, at
// its end, instead of once per link. Syncs that create, update or adopt a
// ReplicaSet still write at once: their conditions (NewReplicaSetCreated,
// say) are news that a later sync would not repeat. A caller that does not
// sync a Deployment again on its ReplicaSets' events (a one-shot tool, say)
// should set EagerStatus.
func (r *Reconciler) Reconcile(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	start := r.cfg.Clock.Now()
	// Guarded: the arguments of a disabled line would still be boxed on
	// every sync.
	if v := log.V(4); v.Enabled() {
		v.Info("Started syncing deployment", "deployment", key, "startTime", start)
	}
	defer func() {
		if v := log.V(4); v.Enabled() {
			v.Info("Finished syncing deployment", "deployment", key, "duration", r.cfg.Clock.Now().Sub(start))
		}
	}()
	d, err := r.cfg.Deployments.Get(ctx, key)
	if apierrors.IsNotFound(err) {
		log.V(2).Info("Deployment has been deleted", "deployment", key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("deployment %s: %w", key, err)
	}
	state, narrowed, err := r.snapshot(ctx, d)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("deployment %s: %w", key, err)
	}
	now := r.cfg.Clock.Now()
	plan, err := Sync(state, now)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("deployment %s: %w", key, err)
	}
	if narrowed {
		// The snapshot left out ReplicaSets owned by others. Sync looks at
		// them for one thing only: whether the name of a ReplicaSet it
		// creates is taken (a hash collision). Decide again with it.
		if taken, err := r.nameTaken(ctx, state, plan); err != nil {
			return reconcile.Result{}, fmt.Errorf("deployment %s: %w", key, err)
		} else if taken != nil {
			state.ReplicaSets = append(state.ReplicaSets, taken)
			if plan, err = Sync(state, now); err != nil {
				return reconcile.Result{}, fmt.Errorf("deployment %s: %w", key, err)
			}
		}
	}
	if err := r.canAdopt(ctx, d, plan); err != nil {
		return reconcile.Result{}, err
	}
	if _, err := WritePlan(ctx, r.cfg.Client, r.cfg.Events, plan); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// snapshot reads what Sync needs: the ReplicaSets of the namespace and,
// for Recreate, the pods of those the Deployment owns or may adopt. With
// a [ReplicaSetsByController] lister it reads only the ReplicaSets the
// Deployment controls and the namespace's orphans, and reports narrowed.
func (r *Reconciler) snapshot(ctx context.Context, d *appsv1.Deployment) (_ State, narrowed bool, err error) {
	rss, narrowed, err := r.listReplicaSets(ctx, d)
	if err != nil {
		return State{}, false, err
	}
	s := State{Deployment: d, ReplicaSets: rss, FeatureGates: r.FeatureGates(), DeferStatus: !r.cfg.EagerStatus}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return s, narrowed, nil
	}
	if r.cfg.Pods == nil {
		return State{}, false, errors.New("ReconcilerConfig.Pods is nil, and Recreate needs pods")
	}
	s.Pods = make(map[types.UID][]*corev1.Pod)
	for _, rs := range rss {
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID != d.UID {
			continue
		}
		pods, err := r.cfg.Pods.ListByController(ctx, rs.Namespace, rs.UID)
		if err != nil {
			return State{}, false, err
		}
		s.Pods[rs.UID] = inNamespace(pods, rs.Namespace)
	}
	return s, narrowed, nil
}

// listReplicaSets lists the namespace's ReplicaSets, or, through
// [ReplicaSetsByController], those d controls and the orphans.
func (r *Reconciler) listReplicaSets(ctx context.Context, d *appsv1.Deployment) (_ []*appsv1.ReplicaSet, narrowed bool, err error) {
	idx := r.index
	if idx == nil {
		rss, err := r.cfg.ReplicaSets.List(ctx, d.Namespace, labels.Everything())
		return rss, false, err
	}
	owned, err := idx.ListByController(ctx, d.Namespace, d.UID)
	if err != nil {
		return nil, false, err
	}
	orphans, err := idx.ListByController(ctx, d.Namespace, "")
	if err != nil {
		return nil, false, err
	}
	rss := make([]*appsv1.ReplicaSet, 0, len(owned)+len(orphans))
	for _, rs := range owned {
		if rs.Namespace == d.Namespace { // a controller reference cannot cross namespaces; a lister may
			rss = append(rss, rs)
		}
	}
	return append(rss, orphans...), true, nil
}

// nameTaken returns the cached ReplicaSet that holds the name of the
// ReplicaSet plan creates, if the narrowed state lacks it.
func (r *Reconciler) nameTaken(ctx context.Context, state State, plan Plan) (*appsv1.ReplicaSet, error) {
	for _, a := range plan.Actions {
		create, ok := a.(CreateReplicaSet)
		if !ok {
			continue
		}
		key := keyOf(create.ReplicaSet)
		for _, rs := range state.ReplicaSets {
			if rs != nil && keyOf(rs) == key {
				return nil, nil
			}
		}
		rs, err := r.index.Get(ctx, key)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return rs, err
	}
	return nil, nil
}

// canAdopt re-reads the Deployment, uncached, when the plan adopts
// ReplicaSets: adoption is refused if it is gone, was recreated (another
// UID) or is being deleted (upstream RecheckDeletionTimestamp).
func (r *Reconciler) canAdopt(ctx context.Context, d *appsv1.Deployment, plan Plan) error {
	var adopt *AdoptReplicaSet
	for _, a := range plan.Actions {
		if a, ok := a.(AdoptReplicaSet); ok {
			adopt = &a
			break
		}
	}
	if adopt == nil {
		return nil
	}
	fresh, err := r.cfg.Live.Get(ctx, keyOf(d))
	switch {
	case err != nil:
		err = fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
	case fresh.UID != d.UID:
		err = fmt.Errorf("original Deployment %v/%v is gone: got uid %v, wanted %v", d.Namespace, d.Name, fresh.UID, d.UID)
	case fresh.DeletionTimestamp != nil:
		err = fmt.Errorf("%v/%v has just been deleted at %v", d.Namespace, d.Name, fresh.DeletionTimestamp)
	default:
		return nil
	}
	return fmt.Errorf("deployment %s: can't adopt ReplicaSet %s (%s): %w", keyOf(d), adopt.Key, adopt.UID, err)
}

// inNamespace returns the pods of namespace: pods itself when all are
// (always, with UIDs unique cluster-wide), otherwise a filtered copy.
func inNamespace(pods []*corev1.Pod, namespace string) []*corev1.Pod {
	for _, p := range pods {
		if p.Namespace != namespace {
			return slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { return p.Namespace != namespace })
		}
	}
	return pods
}
