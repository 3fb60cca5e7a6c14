package rollout

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Scale is one ReplicaSet update decided by [Rolling], [Recreate] or
// [Proportional]: set spec.replicas to To and the desired-replicas and
// max-replicas annotations to DesiredReplicas and MaxReplicas (upstream
// scaleReplicaSet, which issues an Update). A Scale with From == To only
// refreshes the annotations.
type Scale struct {
	// ReplicaSet is the caller's object, as passed in; it is never
	// modified. Use [Scale.Scaled] for the object to send.
	ReplicaSet *appsv1.ReplicaSet
	// From is spec.replicas before this update. It can differ from
	// ReplicaSet's when an earlier Scale in the same list resized the same
	// ReplicaSet (a rolling step may shrink one twice).
	From int32
	// To is the new spec.replicas.
	To int32
	// DesiredReplicas and MaxReplicas are the annotation values: the
	// Deployment's spec.replicas and spec.replicas + MaxSurge.
	DesiredReplicas, MaxReplicas int32
}

// Resized reports whether the update changes spec.replicas; only then does
// upstream record a ScalingReplicaSet event.
func (s Scale) Resized() bool { return s.From != s.To }

// String renders the decision for logs and test failures, e.g.
// "scale rs/web-7d9f 3→5".
func (s Scale) String() string {
	return fmt.Sprintf("scale rs/%s %d→%d", name(s.ReplicaSet), s.From, s.To)
}

// Event returns the Normal event upstream records after a successful
// resize — reason ScalingReplicaSet, message "Scaled up replica set %s
// from %d to %d" (or "down") — and ok=false for an annotation-only update.
func (s Scale) Event() (eventType, reason, message string, ok bool) {
	if !s.Resized() {
		return "", "", "", false
	}
	dir := "down"
	if s.From < s.To {
		dir = "up"
	}
	return corev1.EventTypeNormal, EventScalingReplicaSet,
		fmt.Sprintf("Scaled %s replica set %s from %d to %d", dir, name(s.ReplicaSet), s.From, s.To), true
}

// Scaled returns the object to send in the Update: a deep copy of
// ReplicaSet with spec.replicas = To and the two annotations set.
func (s Scale) Scaled() *appsv1.ReplicaSet {
	out := cloneRS(s.ReplicaSet)
	to := s.To
	out.Spec.Replicas = &to
	setReplicasAnnotations(out, s.DesiredReplicas, s.MaxReplicas)
	return out
}

// scaler builds Scales for one Deployment: the annotation values are
// fixed per call.
type scaler struct {
	desired, max int32
}

func newScaler(d *appsv1.Deployment) (scaler, error) {
	surge, err := MaxSurge(d)
	D := desired(d)
	return scaler{desired: D, max: D + surge}, err
}

// lazy is upstream scaleReplicaSet with forceUpdate=false: an update only
// when the size changes.
func (sc scaler) lazy(out []Scale, rs *appsv1.ReplicaSet, from, to int32) []Scale {
	if from == to {
		return out
	}
	return append(out, Scale{ReplicaSet: rs, From: from, To: to, DesiredReplicas: sc.desired, MaxReplicas: sc.max})
}

// forced is scaleReplicaSet with forceUpdate=true: an update when the size
// or the replicas annotations differ.
func (sc scaler) forced(out []Scale, rs *appsv1.ReplicaSet, to int32) []Scale {
	from := specReplicas(rs)
	if from == to && !ReplicasAnnotationsNeedUpdate(rs, sc.desired, sc.max) {
		return out
	}
	return append(out, Scale{ReplicaSet: rs, From: from, To: to, DesiredReplicas: sc.desired, MaxReplicas: sc.max})
}
