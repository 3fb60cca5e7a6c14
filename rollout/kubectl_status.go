package rollout

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
)

// StatusReason classifies the outcome of [Status].
type StatusReason string

// The outcomes of [Status], in the order kubectl checks them.
const (
	// StatusRevisionMismatch: a pinned revision differs from the
	// Deployment's (an error).
	StatusRevisionMismatch StatusReason = "RevisionMismatch"
	// StatusDeadlineExceeded: Progressing says ProgressDeadlineExceeded (an
	// error).
	StatusDeadlineExceeded StatusReason = "ProgressDeadlineExceeded"
	// StatusUpdating: fewer updated replicas than spec.replicas.
	StatusUpdating StatusReason = "UpdatingReplicas"
	// StatusTerminatingOld: old replicas still counted in status.replicas.
	StatusTerminatingOld StatusReason = "OldReplicasPendingTermination"
	// StatusWaitingAvailable: updated replicas not all available yet.
	StatusWaitingAvailable StatusReason = "WaitingForAvailableReplicas"
	// StatusComplete: the rollout finished ("successfully rolled out").
	StatusComplete StatusReason = "Complete"
	// StatusWaitingGeneration: the controller has not observed the latest
	// spec yet.
	StatusWaitingGeneration StatusReason = "WaitingForObservedGeneration"
)

// StatusResult is one answer of `kubectl rollout status`.
type StatusResult struct {
	// Message is exactly what kubectl prints, trailing newline included.
	Message string
	// Done is true when kubectl stops watching with success.
	Done bool
	// Reason classifies the answer.
	Reason StatusReason
}

// Status answers "is d's rollout done?" as `kubectl rollout status` does
// (kubectl DeploymentStatusViewer.Status), with kubectl's exact messages.
// It reads what the controller wrote in d's status; to compute that
// status from ReplicaSets, see [SyncStatus].
//
//   - revision > 0 pins the rollout: d's own revision annotation must match,
//     else an error;
//   - once d.generation ≤ status.observedGeneration: ProgressDeadlineExceeded
//     is an error; then "N out of D new replicas have been updated", "N old
//     replicas are pending termination", "N of M updated replicas are
//     available", or "successfully rolled out" (Done);
//   - before that, "Waiting for deployment spec update to be observed".
//
// Errors carry a Reason too, except for a nil d, which is an error with
// no Reason (kubectl never has a nil Deployment to ask about; reporting
// "successfully rolled out" for one would be a wrong answer). kubectl
// with --watch=false exits 0 even when
// not Done. The Available condition is not consulted, and status.replicas
// excludes terminating pods, so Done can come while old pods terminate.
func Status(d *appsv1.Deployment, revision int64) (StatusResult, error) {
	if d == nil {
		return StatusResult{}, errors.New("rollout: Status: the Deployment is nil")
	}
	if revision > 0 {
		rev, err := Revision(d)
		if err != nil {
			return StatusResult{Reason: StatusRevisionMismatch}, fmt.Errorf("cannot get the revision of deployment %q: %v", d.Name, err)
		}
		if rev != revision {
			return StatusResult{Reason: StatusRevisionMismatch}, fmt.Errorf("desired revision (%d) is different from the running revision (%d)", revision, rev)
		}
	}
	st := d.Status
	if d.Generation > st.ObservedGeneration {
		return StatusResult{Message: "Waiting for deployment spec update to be observed...\n", Reason: StatusWaitingGeneration}, nil
	}
	if c := findCondition(&st, appsv1.DeploymentProgressing); c != nil && c.Reason == ReasonProgressDeadlineExceeded {
		return StatusResult{Reason: StatusDeadlineExceeded}, fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
	}
	prefix := fmt.Sprintf("Waiting for deployment %q rollout to finish: ", d.Name)
	switch {
	case d.Spec.Replicas != nil && st.UpdatedReplicas < *d.Spec.Replicas:
		return StatusResult{Message: prefix + fmt.Sprintf("%d out of %d new replicas have been updated...\n", st.UpdatedReplicas, *d.Spec.Replicas), Reason: StatusUpdating}, nil
	case st.Replicas > st.UpdatedReplicas:
		return StatusResult{Message: prefix + fmt.Sprintf("%d old replicas are pending termination...\n", st.Replicas-st.UpdatedReplicas), Reason: StatusTerminatingOld}, nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return StatusResult{Message: prefix + fmt.Sprintf("%d of %d updated replicas are available...\n", st.AvailableReplicas, st.UpdatedReplicas), Reason: StatusWaitingAvailable}, nil
	}
	return StatusResult{Message: fmt.Sprintf("deployment %q successfully rolled out\n", d.Name), Done: true, Reason: StatusComplete}, nil
}
