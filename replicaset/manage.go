package replicaset

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/features"
)

// Input is the snapshot one sync of a ReplicaSet decides from. Everything
// in it is read-only: ManageReplicas never modifies it.
type Input struct {
	// ReplicaSet is the object being synced.
	ReplicaSet *appsv1.ReplicaSet
	// Active are the active pods rs has claimed (see [ClaimPods]), in the
	// order the claim produced them: the deletion ranking is an unstable
	// sort, so the order decides ties as it does upstream.
	Active []*corev1.Pod
	// Terminating are the terminating pods rs controls and selects
	// ([IsClaimed]); they only count in the status.
	Terminating []*corev1.Pod
	// Failed are the pods rs controls and selects that are in phase Failed
	// (and not being deleted). Those the kubelet rejected pace the
	// creation of their replacements (see [RejectionBackoff]).
	Failed []*corev1.Pod
	// ReplaceRejectedAtOnce replaces rejected pods without the backoff,
	// as upstream does (kubernetes#72593).
	ReplaceRejectedAtOnce bool
	// Related are the pods selected by every ReplicaSet with the same
	// controller as rs (rs included), deduplicated by UID; they give each
	// pod its co-location rank. Empty when rs has no controller.
	Related []*corev1.Pod
	// ExpectationsSatisfied is false while earlier creations or deletions
	// have not been observed yet (see [Expectations.Satisfied]); no pods
	// are then created or deleted, and the status keeps
	// status.observedGeneration (see [ManageReplicas]).
	ExpectationsSatisfied bool
	// Expectation is the ReplicaSet's recorded expectation
	// ([Expectations.Get]), nil when it has none: while expectations are
	// not satisfied, the plan asks for a sync once it expires.
	Expectation *Expectation
	// Deleting are the UIDs of the pods the controller is deleting and has
	// not seen deleted yet ([Expectations.PendingDeletions]): while
	// expectations are not satisfied they count as terminating, whatever
	// the pods say yet.
	Deleting []types.UID
	// DeferStatus leaves the status of a plan that creates or deletes pods
	// to the sync their events trigger (ReconcilerConfig.EagerStatus off):
	// such a plan has no Status and asks for a sync once its expectation
	// expires, in case the events never come.
	DeferStatus bool
	// BurstReplicas caps the pods created or deleted by one plan; 0 means
	// [BurstReplicas].
	BurstReplicas int
	// FeatureGates are the gates to decide with; the zero value is
	// v1.37's defaults. PodDeletionCost off ranks pods for deletion
	// without their deletion cost; DeploymentReplicaSetTerminatingReplicas
	// off leaves status.terminatingReplicas nil.
	FeatureGates features.Gates
}

// ManageReplicas decides one sync of a ReplicaSet at time now: the pods to
// create or delete, the expectation to record, the status to write and the
// requeue delay (upstream manageReplicas, getPodsToDelete, calculateStatus
// and the tail of syncReplicaSet, without any of their writes).
//
// With diff = len(in.Active) − spec.replicas (nil replicas counts as 1):
//   - diff < 0: create min(−diff, burst) pods; expect that many creations.
//     Deviation (kubernetes#72593): with two or more of in.Failed rejected
//     by the kubelet recently, wait as [RejectionBackoff] says (Plan has
//     the Warning event [ReasonRejectedPodsBackoff] and ReplaceAfter
//     instead), then create one pod; unless in.ReplaceRejectedAtOnce;
//   - diff > 0: delete the min(diff, burst) most deletable pods, chosen by
//     [PodsToDelete]; expect their deletions by UID;
//   - nothing is created or deleted when diff is 0, when expectations are
//     not satisfied, or when rs is being deleted.
//
// Status and RequeueAfter assume the actions succeed; see [Plan]. Two
// deliberate differences (see docs/fidelity.md, "Deliberate differences"):
//   - with in.DeferStatus, a plan that creates or deletes pods has no
//     Status; its RequeueAfter is [ExpectationsTimeout] and a second, in
//     case the pods' events never come;
//   - while expectations are not satisfied, the status counts the pods as
//     they are, with the pods of in.Deleting as terminating, but keeps the
//     stored status.observedGeneration (the pod cache is behind the
//     controller's own writes: "this generation is accounted for" waits
//     for the sync that has seen them), and RequeueAfter is at the latest
//     a second after in.Expectation expires.
//
// A nil
// in.ReplicaSet, a ReplicaSet the API server rejects (a negative
// spec.replicas; a nil, empty or invalid selector, or one that does not
// match the template's labels), a template without labels (no pod can be
// created from it: the error wraps [ErrNoLabels]), or a nil pod in
// in.Active, in.Terminating or in.Related, is an error, with an empty
// Plan.
func ManageReplicas(in Input, now time.Time) (Plan, error) {
	if err := checkRS("ManageReplicas", in.ReplicaSet); err != nil {
		return Plan{}, err
	}
	if err := checkSpec("ManageReplicas", in.ReplicaSet); err != nil {
		return Plan{}, err
	}
	if n := replicas(in.ReplicaSet); n < 0 {
		return Plan{}, fmt.Errorf("replicaset: ManageReplicas: spec.replicas is negative (%d)", n)
	}
	if err := in.FeatureGates.Validate(); err != nil {
		return Plan{}, fmt.Errorf("replicaset: ManageReplicas: %w", err)
	}
	for _, l := range []struct {
		what string
		pods []*corev1.Pod
	}{{"Input.Active", in.Active}, {"Input.Terminating", in.Terminating}, {"Input.Related", in.Related}, {"Input.Failed", in.Failed}} {
		if err := checkPods("ManageReplicas", l.what, l.pods); err != nil {
			return Plan{}, err
		}
	}
	if !slices.IsSorted(in.Deleting) {
		in.Deleting = slices.Sorted(slices.Values(in.Deleting))
	}
	return manageReplicas(in, nil, now), nil
}

// manageReplicas is [ManageReplicas] with the status counts of in.Active at
// now already made, or nil to make them here.
func manageReplicas(in Input, counts *podCounts, now time.Time) Plan {
	rs := in.ReplicaSet
	var p Plan
	if in.ExpectationsSatisfied && rs.DeletionTimestamp == nil {
		burst := in.BurstReplicas
		if burst <= 0 {
			burst = BurstReplicas
		}
		switch diff := len(in.Active) - replicas(rs); {
		case diff < 0:
			n := min(-diff, burst)
			if !in.ReplaceRejectedAtOnce {
				switch b := RejectionBackoff(in.Failed, now); {
				case b.Wait > 0:
					n = 0
					p.Actions = []Action{b.event()}
					p.ReplaceAfter = b.Wait
				case b.Probe:
					n = 1
				}
			}
			if n > 0 {
				p.Actions = []Action{CreatePods{Count: n}}
				p.Pending = &Pending{Creations: n}
			}
		case diff > 0:
			victims := podsToDelete(in.Active, in.Related, min(diff, burst), now, in.FeatureGates.Enabled(features.PodDeletionCost))
			uids := make([]types.UID, len(victims))
			for i, v := range victims {
				uids[i] = v.UID
			}
			p.Actions = []Action{DeletePods{Pods: victims}}
			p.Pending = &Pending{Deletions: uids}
		}
	}
	var st appsv1.ReplicaSetStatus
	terminatingOn := in.FeatureGates.Enabled(features.DeploymentReplicaSetTerminatingReplicas)
	if counts != nil {
		st = statusFromCounts(rs, *counts, in.Terminating, nil, now, terminatingOn)
	} else {
		st = calculateStatus(rs, in.Active, in.Terminating, nil, now, terminatingOn)
	}
	switch {
	case !in.ExpectationsSatisfied:
		if len(in.Deleting) > 0 {
			st = statusDeleting(rs, in.Active, in.Terminating, in.Deleting, now, terminatingOn)
		}
		if h, ok := heldStatus(rs, st); ok {
			p.Status = &h
		}
		p.RequeueAfter = sooner(availabilityRequeue(rs, &st, in.Active, now, now), expiry(in, now))
	case in.DeferStatus && p.Pending != nil:
		p.RequeueAfter = ExpectationsTimeout + time.Second
	default:
		if w, ok := statusToWrite(rs, st); ok {
			p.Status = new(appsv1.ReplicaSetStatus) // allocated only when there is one to write
			*p.Status = w
		}
		p.RequeueAfter = sooner(availabilityRequeue(rs, &st, in.Active, now, now), p.ReplaceAfter)
	}
	return p
}

// expiry is how long after now the unsatisfied expectation of in expires,
// and a second more, at least a second; 0 when expectations are satisfied
// or there is none.
func expiry(in Input, now time.Time) time.Duration {
	if in.ExpectationsSatisfied || in.Expectation == nil {
		return 0
	}
	return max(in.Expectation.Timestamp.Add(ExpectationsTimeout+time.Second).Sub(now), time.Second)
}

// afterWrites is the plan p of in once its actions are made, with err the
// first of them that failed, at now: the status is decided again, as
// upstream does after manageReplicas (time has passed, and a failure adds
// the ReplicaFailure condition). False when the status stays deferred
// (in.DeferStatus, and every write succeeded).
func afterWrites(in Input, p Plan, err error, now time.Time) (Plan, bool) {
	if err == nil && in.DeferStatus && p.Pending != nil {
		return p, false
	}
	rs := in.ReplicaSet
	st := calculateStatus(rs, in.Active, in.Terminating, err, now, in.FeatureGates.Enabled(features.DeploymentReplicaSetTerminatingReplicas))
	p.Status = nil
	if w, ok := statusToWrite(rs, st); ok {
		p.Status = &w
	}
	p.RequeueAfter = availabilityRequeue(rs, &st, in.Active, now, now)
	return p, true
}

// requeueAfter is the delay of the sync of plan p after in, decided at
// evaluatedAt, measured again at now as upstream's
// FindMinNextPodAvailabilityCheck does: the pod to wait for is chosen at
// evaluatedAt, its delay measured from now.
func requeueAfter(in Input, p Plan, evaluatedAt, now time.Time) time.Duration {
	if p.RequeueAfter <= 0 {
		return sooner(expiry(in, evaluatedAt), p.ReplaceAfter)
	}
	st := p.Status
	if st == nil {
		st = &in.ReplicaSet.Status
	}
	return sooner(sooner(availabilityRequeue(in.ReplicaSet, st, in.Active, evaluatedAt, now), expiry(in, evaluatedAt)), p.ReplaceAfter)
}

// SlowStartBatches returns the batch sizes in which count calls are made
// when the first batch has initial calls and each later batch doubles,
// capped by what remains: for count 10 and initial 1, [1 2 4 3]. It returns
// nil when count or initial is not positive (the batch sequence of upstream
// slowStartBatch).
func SlowStartBatches(count, initial int) []int {
	var out []int
	for b, left := min(count, initial), count; b > 0; b = min(2*b, left) {
		out = append(out, b)
		left -= b
	}
	return out
}
