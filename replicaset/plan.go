package replicaset

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/plantext"
)

// Plan is what one sync of a ReplicaSet decided. The zero Plan means
// "nothing to do". A Plan is data: printing it, comparing it with cmp.Diff
// and applying it are all separate from deciding it.
//
// The caller applies a plan in this order:
//
//  1. record Pending (before any write, so that the watch events of the
//     writes are counted against it);
//  2. execute Actions in order;
//  3. write Status, if it is non-nil. Status assumes every action
//     succeeded: if one failed, recompute it with [CalculateStatus] and the
//     error instead (that adds the ReplicaFailure condition);
//  4. requeue after RequeueAfter, if it is positive and nothing failed.
type Plan struct {
	// Actions are the writes to make, in order.
	Actions []Action
	// Pending is the expectation to record before acting; nil leaves the
	// recorded expectation alone.
	Pending *Pending
	// Status is the status to write, with ObservedGeneration already set to
	// the ReplicaSet's generation; nil when the stored status is current.
	Status *appsv1.ReplicaSetStatus
	// RequeueAfter is when to sync again so that pods waiting out
	// minReadySeconds are counted as available, or ReplaceAfter if that
	// is sooner; 0 means no requeue.
	RequeueAfter time.Duration
	// ReplaceAfter is how long the replacement of pods the kubelet
	// rejected is held back (see [RejectionBackoff]); 0 when it is not.
	ReplaceAfter time.Duration
}

// String renders the plan one item per line, for logs and test failures;
// a nil action reads "<nil action>".
func (p Plan) String() string {
	var b strings.Builder
	plantext.Actions(&b, p.Actions)
	if p.Pending != nil {
		fmt.Fprintf(&b, "%s\n", p.Pending)
	}
	if s := p.Status; s != nil {
		fmt.Fprintf(&b, "status replicas=%d fullyLabeled=%d ready=%d available=%d", s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas)
		if s.TerminatingReplicas != nil {
			fmt.Fprintf(&b, " terminating=%d", *s.TerminatingReplicas)
		}
		fmt.Fprintf(&b, " observedGeneration=%d", s.ObservedGeneration)
		for _, c := range s.Conditions {
			fmt.Fprintf(&b, " %s=%s(%s)", c.Type, c.Status, c.Reason)
		}
		b.WriteByte('\n')
	}
	plantext.After(&b, "replace rejected pods", p.ReplaceAfter)
	plantext.After(&b, "requeue", p.RequeueAfter)
	return b.String()
}

// Pending is the expectation a plan asks the caller to record (see
// [Expectations]). Exactly one of its fields is set.
type Pending struct {
	// Creations is the number of pod creations to wait for
	// ([Expectations.ExpectCreations]).
	Creations int
	// Deletions are the UIDs of the pods whose deletion to wait for
	// ([Expectations.ExpectDeletions]); each is counted once.
	Deletions []types.UID
}

// String returns e.g. "expect 3 creations" or "expect 2 deletions"; for a
// nil e, which records nothing, "expect nothing".
func (e *Pending) String() string {
	if e == nil {
		return "expect nothing"
	}
	if e.Deletions != nil {
		return fmt.Sprintf("expect %d deletions", len(e.Deletions))
	}
	return fmt.Sprintf("expect %d creations", e.Creations)
}

// Action is one write in a [Plan]. The set is closed: the only
// implementations are [CreatePods], [DeletePods] and [Event].
type Action interface {
	// String returns a one-line description such as "create 3 pods".
	String() string
	isAction()
}

// CreatePods asks for Count pods built with [NewPod]. The caller creates
// them in slow-start batches of 1, 2, 4, … (see [SlowStartBatches]) and stops
// after the first batch with a failure.
type CreatePods struct {
	Count int
}

// DeletePods asks for the deletion of Pods, most deletable first. The caller
// may delete them in parallel.
type DeletePods struct {
	Pods []*corev1.Pod
}

// Event asks for an event on the ReplicaSet.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

func (CreatePods) isAction() {}
func (DeletePods) isAction() {}
func (Event) isAction()      {}

func (a CreatePods) String() string {
	if a.Count == 1 {
		return "create 1 pod"
	}
	return fmt.Sprintf("create %d pods", a.Count)
}

func (a DeletePods) String() string {
	names := make([]string, len(a.Pods))
	for i, p := range a.Pods {
		names[i] = "<nil>"
		if p != nil {
			names[i] = p.Name
		}
	}
	if len(names) == 1 {
		return "delete pod " + names[0]
	}
	return fmt.Sprintf("delete %d pods %s", len(names), strings.Join(names, ", "))
}

func (a Event) String() string {
	return fmt.Sprintf("event %s %s: %s", a.Type, a.Reason, a.Message)
}
