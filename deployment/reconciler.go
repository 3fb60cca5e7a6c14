package deployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
)

// PodControllerIndex is the index [Reconciler] asks its [PodIndexer] for:
// pods by the UID of their controller. Its value is
// informer.IndexControllerUID, so an informer cache of pods serves it.
const PodControllerIndex = "controller-uid"

// Result tells the caller of [Reconciler.Reconcile] when to look at the
// Deployment again, on success.
type Result struct {
	// RequeueAfter, if positive, asks for another sync after that delay
	// (to check the progress deadline).
	RequeueAfter time.Duration
}

// ErrTerminal marks errors that retrying cannot fix; see [Terminal].
var ErrTerminal = errors.New("deployment: terminal error")

// Terminal wraps err so that errors.Is(err, ErrTerminal) holds: the
// worker logs it and forgets the key instead of retrying (like
// controller-runtime's TerminalError). A nil err stays nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return terminalError{err}
}

type terminalError struct{ err error }

func (e terminalError) Error() string        { return "terminal: " + e.err.Error() }
func (e terminalError) Unwrap() error        { return e.err }
func (e terminalError) Is(target error) bool { return target == ErrTerminal }

// Reconciler syncs one Deployment per call: read a snapshot, [Sync],
// [Apply]. Its zero value is not usable: set the listers and Client.
// A Reconciler holds no state between calls and is safe for concurrent
// use by several workers if its fields are.
type Reconciler struct {
	// Deployments reads Deployments, usually from an informer cache.
	Deployments DeploymentGetter
	// ReplicaSets lists ReplicaSets, usually from an informer cache.
	ReplicaSets ReplicaSetLister
	// Pods finds the pods of a ReplicaSet through [PodControllerIndex].
	// Only Recreate Deployments need it; nil makes them fail to sync.
	Pods PodIndexer
	// Live reads the Deployment from the API server, bypassing caches,
	// before ReplicaSets are adopted (a deleted or recreated Deployment
	// must not adopt). Nil means Deployments is used.
	Live DeploymentGetter
	// Client writes.
	Client Client
	// Events records events; nil discards them.
	Events EventRecorder
	// Clock gives the time passed to Sync; nil means the real clock.
	Clock clock.PassiveClock
	// EagerStatus writes the status in every sync that changes it, as
	// upstream does. By default a sync whose only writes are ReplicaSet
	// scales leaves the status to the sync their events trigger; see
	// [Reconciler.Reconcile].
	EagerStatus bool
}

// Reconcile syncs the Deployment key names. A Deployment that no longer
// exists is not an error. Errors wrapping [ErrTerminal] must not be
// retried; others should be, with backoff.
//
// One deliberate difference from upstream, unless EagerStatus is set: a
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
func (r *Reconciler) Reconcile(ctx context.Context, key types.NamespacedName) (Result, error) {
	d, err := r.Deployments.Get(key)
	if apierrors.IsNotFound(err) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("deployment %s: %w", key, err)
	}
	state, narrowed, err := r.snapshot(d)
	if err != nil {
		return Result{}, fmt.Errorf("deployment %s: %w", key, err)
	}
	now := time.Now()
	if r.Clock != nil {
		now = r.Clock.Now()
	}
	plan, err := Sync(state, now)
	if err != nil {
		return Result{}, fmt.Errorf("deployment %s: %w", key, err)
	}
	if narrowed {
		// The snapshot left out ReplicaSets owned by others. Sync looks at
		// them for one thing only: whether the name of a ReplicaSet it
		// creates is taken (a hash collision). Decide again with it.
		if taken, err := r.nameTaken(state, plan); err != nil {
			return Result{}, fmt.Errorf("deployment %s: %w", key, err)
		} else if taken != nil {
			state.ReplicaSets = append(state.ReplicaSets, taken)
			if plan, err = Sync(state, now); err != nil {
				return Result{}, fmt.Errorf("deployment %s: %w", key, err)
			}
		}
	}
	if err := r.canAdopt(d, plan); err != nil {
		return Result{}, err
	}
	if !r.EagerStatus && onlyScales(plan) {
		plan.UpdateStatus = nil
	}
	if _, err := Apply(ctx, r.Client, r.Events, plan); err != nil {
		return Result{}, err
	}
	return Result{RequeueAfter: plan.RequeueAfter}, nil
}

// onlyScales reports whether plan writes something and every write is a
// ReplicaSet scale (events aside).
func onlyScales(plan Plan) bool {
	scales := 0
	for _, a := range plan.Actions {
		switch a.(type) {
		case ScaleReplicaSet:
			scales++
		case Event:
		default:
			return false
		}
	}
	return scales > 0
}

// snapshot reads what Sync needs: the ReplicaSets of the namespace and,
// for Recreate, the pods of those the Deployment owns or may adopt. With
// a [ReplicaSetsByController] lister it reads only the ReplicaSets the
// Deployment controls and the namespace's orphans, and reports narrowed.
func (r *Reconciler) snapshot(d *appsv1.Deployment) (_ State, narrowed bool, err error) {
	rss, narrowed, err := r.listReplicaSets(d)
	if err != nil {
		return State{}, false, err
	}
	s := State{Deployment: d, ReplicaSets: rss}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return s, narrowed, nil
	}
	if r.Pods == nil {
		return State{}, false, errors.New("Reconciler.Pods is nil, and Recreate needs pods")
	}
	s.Pods = make(map[types.UID][]*corev1.Pod)
	for _, rs := range rss {
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID != d.UID {
			continue
		}
		pods, err := r.Pods.ByIndex(PodControllerIndex, string(rs.UID))
		if err != nil {
			return State{}, false, err
		}
		s.Pods[rs.UID] = pods
	}
	return s, narrowed, nil
}

// listReplicaSets lists the namespace's ReplicaSets, or, through
// [ReplicaSetsByController], those d controls and the orphans.
func (r *Reconciler) listReplicaSets(d *appsv1.Deployment) (_ []*appsv1.ReplicaSet, narrowed bool, err error) {
	idx, ok := r.ReplicaSets.(ReplicaSetsByController)
	if !ok {
		rss, err := r.ReplicaSets.List(d.Namespace, labels.Everything())
		return rss, false, err
	}
	owned, err := idx.ListByController(d.Namespace, d.UID)
	if err != nil {
		return nil, false, err
	}
	orphans, err := idx.ListByController(d.Namespace, "")
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
func (r *Reconciler) nameTaken(state State, plan Plan) (*appsv1.ReplicaSet, error) {
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
		rs, err := r.ReplicaSets.(ReplicaSetsByController).Get(key)
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
func (r *Reconciler) canAdopt(d *appsv1.Deployment, plan Plan) error {
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
	live := r.Live
	if live == nil {
		live = r.Deployments
	}
	fresh, err := live.Get(keyOf(d))
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
