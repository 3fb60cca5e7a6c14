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
}

// Reconcile syncs the Deployment key names. A Deployment that no longer
// exists is not an error. Errors wrapping [ErrTerminal] must not be
// retried; others should be, with backoff.
func (r *Reconciler) Reconcile(ctx context.Context, key types.NamespacedName) (Result, error) {
	d, err := r.Deployments.Get(key)
	if apierrors.IsNotFound(err) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("deployment %s: %w", key, err)
	}
	state, err := r.snapshot(d)
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
	if err := r.canAdopt(d, plan); err != nil {
		return Result{}, err
	}
	if _, err := Apply(ctx, r.Client, r.Events, plan); err != nil {
		return Result{}, err
	}
	return Result{RequeueAfter: plan.RequeueAfter}, nil
}

// snapshot reads what Sync needs: every ReplicaSet of the namespace and,
// for Recreate, the pods of those the Deployment owns or may adopt.
func (r *Reconciler) snapshot(d *appsv1.Deployment) (State, error) {
	rss, err := r.ReplicaSets.List(d.Namespace, labels.Everything())
	if err != nil {
		return State{}, err
	}
	s := State{Deployment: d, ReplicaSets: rss}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return s, nil
	}
	if r.Pods == nil {
		return State{}, errors.New("Reconciler.Pods is nil, and Recreate needs pods")
	}
	s.Pods = make(map[types.UID][]*corev1.Pod)
	for _, rs := range rss {
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID != d.UID {
			continue
		}
		pods, err := r.Pods.ByIndex(PodControllerIndex, string(rs.UID))
		if err != nil {
			return State{}, err
		}
		s.Pods[rs.UID] = pods
	}
	return s, nil
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
