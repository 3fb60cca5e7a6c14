package deployment

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/plantext"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// Plan is what one sync of a Deployment decided. A Plan is data: printing
// it, comparing it with cmp.Diff and applying it are separate from
// deciding it. The zero Plan means "nothing to do".
//
// The caller applies a plan in this order (see [WritePlan]):
//
//  1. execute Actions in order, stopping at the first failure; an [Event]
//     is recorded only when every write before it succeeded;
//  2. write UpdateStatus through the status subresource, if it is non-nil,
//     using the resourceVersion returned by an [UpdateDeployment] action if
//     the plan had one;
//  3. requeue after RequeueAfter, if it is positive and nothing failed.
type Plan struct {
	// Deployment is the Deployment the plan is for, as found in the
	// snapshot. It is read-only: events are recorded against it.
	Deployment *appsv1.Deployment
	// Actions are the writes (and events) to make, in order.
	Actions []Action
	// UpdateStatus is the Deployment to write through the status
	// subresource after every action: its Status is the new status and
	// its annotations carry the synced revision annotation (the status
	// subresource persists annotations). Nil when neither changed.
	UpdateStatus *appsv1.Deployment
	// RequeueAfter is when to sync again to check the progress deadline;
	// 0 means no requeue.
	RequeueAfter time.Duration
}

// IsEmpty reports whether the plan asks for nothing: no action, no status
// write and no requeue.
func (p Plan) IsEmpty() bool {
	return len(p.Actions) == 0 && p.UpdateStatus == nil && p.RequeueAfter == 0
}

// HasWrites reports whether the plan writes anything to the API (events
// and requeues are not writes).
func (p Plan) HasWrites() bool {
	if p.UpdateStatus != nil {
		return true
	}
	for _, a := range p.Actions {
		if _, ok := a.(Event); !ok {
			return true
		}
	}
	return false
}

// String renders the plan one item per line, for logs, golden files and
// test failures.
func (p Plan) String() string {
	var b strings.Builder
	plantext.Actions(&b, p.Actions)
	if p.UpdateStatus != nil {
		b.WriteString(statusLine(p.Deployment, p.UpdateStatus))
		b.WriteByte('\n')
	}
	plantext.After(&b, "requeue", p.RequeueAfter)
	if b.Len() == 0 {
		return "no-op\n"
	}
	return b.String()
}

// Action is one step of a [Plan]. The set of actions is closed: only the
// types of this package implement it.
type Action interface {
	// String describes the action on one line, e.g. "scale rs/web-7d9f6b 3→5".
	String() string
	isAction()
}

// CreateReplicaSet creates the new ReplicaSet of a rollout.
type CreateReplicaSet struct {
	// ReplicaSet is the object to create.
	ReplicaSet *appsv1.ReplicaSet
	// OnFailure is the Deployment to write through the status subresource
	// if the create fails with anything but AlreadyExists or a terminating
	// namespace: its Progressing condition is False/ReplicaSetCreateError
	// and its message lacks only the error text, which [WritePlan] appends.
	// Nil when the Deployment has no progress deadline.
	OnFailure *appsv1.Deployment
}

// ScaleReplicaSet updates a ReplicaSet's spec.replicas and its
// desired-replicas and max-replicas annotations. From == To means the
// annotations alone were stale.
type ScaleReplicaSet struct {
	// ReplicaSet is the full object to write with Update.
	ReplicaSet *appsv1.ReplicaSet
	// From and To are spec.replicas before and after.
	From, To int32
}

// UpdateReplicaSet rewrites the new ReplicaSet's annotations (revision,
// revision history, annotations copied from the Deployment) and its
// minReadySeconds.
type UpdateReplicaSet struct {
	// ReplicaSet is the full object to write with Update.
	ReplicaSet *appsv1.ReplicaSet
}

// DeleteReplicaSet deletes an old ReplicaSet beyond revisionHistoryLimit.
type DeleteReplicaSet struct {
	// Key names the ReplicaSet.
	Key types.NamespacedName
	// UID is a precondition: a ReplicaSet recreated under the same name is
	// not deleted.
	UID types.UID
}

// AdoptReplicaSet makes the Deployment the controller of an orphan
// ReplicaSet its selector matches.
type AdoptReplicaSet struct {
	Key types.NamespacedName
	UID types.UID
	// Patch is the strategic-merge patch to send.
	Patch []byte
}

// ReleaseReplicaSet removes the Deployment's controller reference from a
// ReplicaSet its selector no longer matches.
type ReleaseReplicaSet struct {
	Key types.NamespacedName
	UID types.UID
	// Patch is the strategic-merge patch to send.
	Patch []byte
}

// UpdateDeployment writes the Deployment's spec and metadata. Only a
// rollback does this: it restores an old template and clears the rollback
// annotation.
type UpdateDeployment struct {
	Deployment *appsv1.Deployment
}

// Event is an event to record against the Deployment.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type    string
	Reason  string
	Message string
}

func (CreateReplicaSet) isAction()  {}
func (ScaleReplicaSet) isAction()   {}
func (UpdateReplicaSet) isAction()  {}
func (DeleteReplicaSet) isAction()  {}
func (AdoptReplicaSet) isAction()   {}
func (ReleaseReplicaSet) isAction() {}
func (UpdateDeployment) isAction()  {}
func (Event) isAction()             {}

var (
	_ Action = CreateReplicaSet{}
	_ Action = ScaleReplicaSet{}
	_ Action = UpdateReplicaSet{}
	_ Action = DeleteReplicaSet{}
	_ Action = AdoptReplicaSet{}
	_ Action = ReleaseReplicaSet{}
	_ Action = UpdateDeployment{}
	_ Action = Event{}
)

// String returns e.g. "create rs/web-7d9f6b replicas=3 revision=2".
func (a CreateReplicaSet) String() string {
	rs := a.ReplicaSet
	if rs == nil {
		return "create rs/<nil>"
	}
	return fmt.Sprintf("create rs/%s replicas=%d revision=%s", rs.Name, replicas(rs.Spec.Replicas), rs.Annotations[revisionAnnotation])
}

// String returns e.g. "scale rs/web-7d9f6b 3→5", or
// "scale rs/web-7d9f6b 3→3 (annotations)" when only the annotations change.
func (a ScaleReplicaSet) String() string {
	name := "<nil>"
	if a.ReplicaSet != nil {
		name = a.ReplicaSet.Name
	}
	if a.From == a.To {
		return fmt.Sprintf("scale rs/%s %d→%d (annotations)", name, a.From, a.To)
	}
	return fmt.Sprintf("scale rs/%s %d→%d", name, a.From, a.To)
}

// String returns e.g. "update rs/web-7d9f6b revision=3 minReadySeconds=0".
func (a UpdateReplicaSet) String() string {
	rs := a.ReplicaSet
	if rs == nil {
		return "update rs/<nil>"
	}
	s := fmt.Sprintf("update rs/%s revision=%s", rs.Name, rs.Annotations[revisionAnnotation])
	if h := rs.Annotations[revisionHistoryAnnotation]; h != "" {
		s += " history=" + h
	}
	return s + fmt.Sprintf(" minReadySeconds=%d", rs.Spec.MinReadySeconds)
}

// String returns e.g. "delete rs/web-7d9f6b".
func (a DeleteReplicaSet) String() string { return "delete rs/" + a.Key.Name }

// String returns e.g. "adopt rs/web-7d9f6b".
func (a AdoptReplicaSet) String() string { return "adopt rs/" + a.Key.Name }

// String returns e.g. "release rs/web-7d9f6b".
func (a ReleaseReplicaSet) String() string { return "release rs/" + a.Key.Name }

// String returns e.g. "update deployment/web (rollback)".
func (a UpdateDeployment) String() string {
	name := "<nil>"
	if a.Deployment != nil {
		name = a.Deployment.Name
	}
	return fmt.Sprintf("update deployment/%s (rollback annotation cleared)", name)
}

// String returns e.g. `event Normal ScalingReplicaSet "Scaled up replica set web-7d9f6b from 0 to 3"`.
func (a Event) String() string {
	return fmt.Sprintf("event %s %s %q", a.Type, a.Reason, a.Message)
}

// statusLine renders a status write compactly, listing the revision
// annotation only when it changed.
func statusLine(old, d *appsv1.Deployment) string {
	s := d.Status
	var b strings.Builder
	fmt.Fprintf(&b, "status gen=%d replicas=%d updated=%d ready=%d available=%d unavailable=%d",
		s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas)
	if s.TerminatingReplicas != nil {
		fmt.Fprintf(&b, " terminating=%d", *s.TerminatingReplicas)
	}
	if s.CollisionCount != nil {
		fmt.Fprintf(&b, " collisions=%d", *s.CollisionCount)
	}
	if rev := d.Annotations[revisionAnnotation]; old == nil || old.Annotations[revisionAnnotation] != rev {
		fmt.Fprintf(&b, " revision=%s", rev)
	}
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s)", c.Type, c.Status, c.Reason)
	}
	return b.String()
}

// replicas reads a spec.replicas; nil is the API default
// (rollout.DefaultReplicas).
func replicas(p *int32) int32 { return rollout.ReplicasOrDefault(p) }

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
