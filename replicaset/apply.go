package replicaset

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// Applied reports how far [Apply] got. The caller uses it to correct the
// expectations it recorded for the plan: creations that were never made
// and deletions that failed will never be observed.
type Applied struct {
	// Created counts successful creations. A creation refused because the
	// namespace is terminating counts as a success, as upstream.
	Created int
	// CreatesSkipped counts the creations asked for but not made: failed,
	// or in a batch after a failure. Lower the expected creations by it.
	CreatesSkipped int
	// Deleted counts successful deletions.
	Deleted int
	// DeletesFailed are the UIDs of the pods whose deletion failed, NotFound
	// included. Mark each as observed.
	DeletesFailed []types.UID
}

// Apply executes the actions of p for rs, in order, and emits the pod
// events upstream's pod control emits (nil events discards them). It does
// not record expectations or write the status: see [Plan] for the order.
//
//   - [CreatePods]: pods from [NewPod], created in slow-start batches
//     ([SlowStartBatches] with [SlowStartInitialBatchSize]); the calls of a
//     batch run concurrently and a batch with a failure ends the action.
//     Events: SuccessfulCreate, or FailedCreate unless the namespace is
//     terminating (that failure is ignored altogether).
//   - [DeletePods]: every pod deleted concurrently, with its UID as a
//     precondition. NotFound counts as deleted and is not an error.
//     Events: SuccessfulDelete, or FailedDelete except for NotFound.
//   - [Event]: recorded on rs.
//
// It returns the first error, in pod order, of the first failing action;
// later actions are not executed.
func Apply(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, p Plan) (Applied, error) {
	return apply(ctx, c, events, rs, p, false)
}

// apply is Apply; sequential makes the calls of a batch one after another,
// in order, for simulations that must replay exactly (the calls of a batch
// would otherwise reach the API server in any order).
func apply(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, p Plan, sequential bool) (Applied, error) {
	if events == nil {
		events = discardEvents{}
	}
	var res Applied
	for _, a := range p.Actions {
		var err error
		switch a := a.(type) {
		case CreatePods:
			err = createPods(ctx, c, events, rs, a.Count, &res, sequential)
		case DeletePods:
			err = deletePods(ctx, c, events, rs, a.Pods, &res, sequential)
		case Event:
			events.Event(rs, a.Type, a.Reason, a.Message)
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

func createPods(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, count int, res *Applied, sequential bool) error {
	tpl, err := NewPod(rs)
	if err != nil {
		res.CreatesSkipped += count
		return err
	}
	done := 0
	for _, size := range SlowStartBatches(count, SlowStartInitialBatchSize) {
		errs := make([]error, size)
		each(size, sequential, func(i int) { errs[i] = createPod(ctx, c, events, rs, tpl.DeepCopy()) })
		first := error(nil)
		for _, e := range errs {
			if e == nil {
				done++
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

func createPod(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	created, err := c.CreatePod(ctx, pod)
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil // every create would fail; the namespace is going away
		}
		events.Event(rs, corev1.EventTypeWarning, ReasonFailedCreate, fmt.Sprintf("Error creating: %v", err))
		return err
	}
	events.Event(rs, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: "+created.Name)
	return nil
}

func deletePods(ctx context.Context, c PodWriter, events EventRecorder, rs *appsv1.ReplicaSet, pods []*corev1.Pod, res *Applied, sequential bool) error {
	errs := make([]error, len(pods))
	gone := make([]bool, len(pods)) // NotFound: already deleted
	each(len(pods), sequential, func(i int) {
		pod := pods[i]
		err := c.DeletePod(ctx, pod.Namespace, pod.Name, pod.UID)
		switch {
		case err == nil:
			events.Event(rs, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: "+pod.Name)
		case apierrors.IsNotFound(err):
			gone[i] = true
		default:
			events.Event(rs, corev1.EventTypeWarning, ReasonFailedDelete, fmt.Sprintf("Error deleting: %v", err))
			errs[i] = fmt.Errorf("unable to delete pod %s: %w", pod.Name, err)
		}
	})
	var first error
	for i, pod := range pods {
		switch {
		case errs[i] != nil:
			res.DeletesFailed = append(res.DeletesFailed, pod.UID)
			if first == nil {
				first = errs[i]
			}
		case gone[i]:
			res.DeletesFailed = append(res.DeletesFailed, pod.UID)
		default:
			res.Deleted++
		}
	}
	return first
}

// each calls f(0), ..., f(n-1): concurrently, and returns when all have
// returned, or one after another when sequential is set.
func each(n int, sequential bool, f func(i int)) {
	if sequential {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}
