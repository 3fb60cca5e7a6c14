package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
)

// PodWrites reports how far [WritePods] got. The caller uses it to
// correct the expectations it recorded for the plan: creations that were
// never made and deletions that failed will never be observed.
type PodWrites struct {
	// Created counts successful creations. A creation refused because the
	// namespace is terminating counts as a success, as upstream.
	Created int
	// CreatedPods are the pods created, as the API server returned them,
	// in the order of their creation batches.
	CreatedPods []*corev1.Pod
	// CreatesSkipped counts the creations asked for but not made: failed,
	// or in a batch after a failure. Lower the expected creations by it.
	CreatesSkipped int
	// Deleted counts successful deletions.
	Deleted int
	// DeletesFailed are the UIDs of the pods whose deletion failed, NotFound
	// included. Mark each as observed.
	DeletesFailed []types.UID
	// DeletesUnsettled are the UIDs of the pods whose deletion failed and
	// may have happened all the same: no live read could tell (see
	// [WritePods]). Keep expecting them: if the deletion happened, its event
	// comes; if not, the expectation expires.
	DeletesUnsettled []types.UID
}

// WritePods makes the pod writes of p for rs (its actions, in order) and
// emits the pod events upstream's pod control emits (nil events discards
// them). It does not record expectations or write the status: see [Plan]
// for the order.
//
//   - [CreatePods]: pods from [NewPod], created in slow-start batches
//     ([SlowStartBatches] with slowStartInitialBatchSize); the calls of a
//     batch run concurrently and a batch with a failure ends the action.
//     Events: SuccessfulCreate, or FailedCreate unless the namespace is
//     terminating (that failure is ignored altogether).
//   - [DeletePods]: every pod deleted concurrently, with its UID as a
//     precondition. NotFound counts as deleted and is not an error.
//     Events: SuccessfulDelete, or FailedDelete except for NotFound. The
//     error of a failed deletion reads "unable to delete pods: <API
//     error>", as upstream's (it becomes the ReplicaFailure message).
//     Deviation: when c is also a [PodGetter], a deletion that failed
//     with any other error is settled with a live read first, since the
//     error may hide a deletion that happened (a lost response, a
//     timeout). A pod that is gone, replaced (another UID) or being
//     deleted counts as deleted; one still there is a failure
//     (DeletesFailed); if the read fails too, the deletion is reported
//     as failed but listed in DeletesUnsettled. Upstream takes every
//     error for "not deleted" and, its cache still showing the pod, may
//     delete one pod too many on the next sync.
//   - [Event]: recorded on rs.
//
// It returns the first error, in pod order, of the first failing action;
// later actions are not executed. A nil c or rs, or a nil pod to delete,
// is an error before anything is written.
func WritePods(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, p Plan) (PodWrites, error) {
	return writePods(ctx, c, events, rs, p, nil)
}

// writePods is WritePods, with the concurrent calls of a batch forked on
// clk (clock.Fork; nil: plain goroutines): on a simulation's virtual
// clock they are tracked work, so that virtual time stays exact while they
// sleep in requests with latency, and a deterministic clock orders them
// (one after another, in order, or in an interleaving's order), so that
// the simulation replays exactly.
func writePods(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, p Plan, clk clock.Clock) (PodWrites, error) {
	if c == nil {
		return PodWrites{}, errors.New("replicaset: WritePods: the PodWriter is nil")
	}
	if err := checkRS("WritePods", rs); err != nil {
		return PodWrites{}, err
	}
	for _, a := range p.Actions {
		if d, ok := a.(DeletePods); ok {
			if err := checkPods("WritePods", "DeletePods.Pods", d.Pods); err != nil {
				return PodWrites{}, err
			}
		}
	}
	if events == nil {
		events = discardEvents{}
	}
	var res PodWrites
	for _, a := range p.Actions {
		var err error
		switch a := a.(type) {
		case CreatePods:
			err = createPods(ctx, c, events, rs, a.Count, &res, clk)
		case DeletePods:
			err = deletePods(ctx, c, events, rs, a.Pods, &res, clk)
		case Event:
			events.Event(rs, a.Type, a.Reason, a.Message)
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

func createPods(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, count int, res *PodWrites, clk clock.Clock) error {
	tpl, err := NewPod(rs)
	if err != nil {
		res.CreatesSkipped += count
		return err
	}
	done := 0
	for _, size := range SlowStartBatches(count, slowStartInitialBatchSize) {
		errs := make([]error, size)
		created := make([]*corev1.Pod, size)
		each(size, clk, func(i int) { created[i], errs[i] = createPod(ctx, c, events, rs, tpl.DeepCopy()) })
		first := error(nil)
		for i, e := range errs {
			if e == nil {
				done++
				if created[i] != nil {
					res.CreatedPods = append(res.CreatedPods, created[i])
				}
			} else if first == nil {
				first = e
			}
		}
		if first != nil {
			res.Created += done
			res.CreatesSkipped += count - done
			return first
		}
	}
	res.Created += done
	return nil
}

// createPod creates pod and returns what the API server stored (nil when
// the namespace is terminating, which is not an error).
func createPod(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, pod *corev1.Pod) (*corev1.Pod, error) {
	created, err := c.CreatePod(ctx, pod)
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil, nil // every create would fail; the namespace is going away
		}
		events.Event(rs, corev1.EventTypeWarning, ReasonFailedCreate, fmt.Sprintf("Error creating: %v", err))
		return nil, err
	}
	if created == nil {
		return nil, fmt.Errorf("creating a pod of %s/%s: the client returned no pod and no error", rs.Namespace, rs.Name)
	}
	logr.FromContextOrDiscard(ctx).V(4).Info("Created pod", "pod", types.NamespacedName{Namespace: created.Namespace, Name: created.Name},
		"replicaSet", types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name})
	events.Event(rs, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: "+created.Name)
	return created, nil
}

func deletePods(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, pods []*corev1.Pod, res *PodWrites, clk clock.Clock) error {
	outcomes := make([]deleteOutcome, len(pods))
	live, _ := c.(PodGetter)
	each(len(pods), clk, func(i int) { outcomes[i] = deletePod(ctx, c, live, events, rs, pods[i]) })
	var first error
	for i, pod := range pods {
		o := outcomes[i]
		switch {
		case o.err != nil && o.unsettled:
			res.DeletesUnsettled = append(res.DeletesUnsettled, pod.UID)
		case o.err != nil, o.gone:
			res.DeletesFailed = append(res.DeletesFailed, pod.UID)
		default:
			res.Deleted++
		}
		if o.err != nil && first == nil {
			first = o.err
		}
	}
	return first
}

// each calls f(0), ..., f(n-1) concurrently and returns when all have
// returned: forked on clk when there is one (clock.Fork).
func each(n int, clk clock.Clock, f func(i int)) {
	if clk != nil {
		clock.Fork(clk, n, f)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

// deleteOutcome is what became of one pod deletion.
type deleteOutcome struct {
	err       error // the deletion failed (or could not be settled)
	gone      bool  // NotFound: already deleted, its event may never come
	unsettled bool  // with err: it may have happened
}

// deletePod deletes pod and, if that fails and live is set, settles with a
// live read whether it happened anyway.
func deletePod(ctx context.Context, c PodWriter, live PodGetter, events EventRecorder, rs *appsv1.ReplicaSet, pod *corev1.Pod) deleteOutcome {
	err := c.DeletePod(ctx, pod.Namespace, pod.Name, pod.UID)
	if apierrors.IsNotFound(err) {
		return deleteOutcome{gone: true}
	}
	var unsettled bool
	if err != nil && live != nil {
		cur, getErr := live.GetPod(ctx, pod.Namespace, pod.Name)
		switch {
		case apierrors.IsNotFound(getErr), getErr == nil && (cur.UID != pod.UID || cur.DeletionTimestamp != nil):
			err = nil // it happened: its event will come
		case getErr != nil:
			unsettled = true
		}
	}
	if err != nil {
		events.Event(rs, corev1.EventTypeWarning, ReasonFailedDelete, fmt.Sprintf("Error deleting: %v", err))
		return deleteOutcome{err: fmt.Errorf("unable to delete pods: %w", err), unsettled: unsettled}
	}
	logr.FromContextOrDiscard(ctx).V(4).Info("Deleted pod", "pod", types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		"replicaSet", types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name})
	events.Event(rs, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: "+pod.Name)
	return deleteOutcome{}
}
