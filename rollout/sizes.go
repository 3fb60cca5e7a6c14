package rollout

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
)

// TotalReplicas is Σ spec.replicas over rss, skipping nil entries
// (upstream GetReplicaCountForReplicaSets). Sums wrap around in int32
// exactly as upstream's do.
func TotalReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += specReplicas(rs)
		}
	}
	return n
}

// TotalActualReplicas is Σ status.replicas over rss, skipping nil entries
// (upstream GetActualReplicaCountForReplicaSets).
func TotalActualReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.Replicas
		}
	}
	return n
}

// TotalReadyReplicas is Σ status.readyReplicas over rss, skipping nil
// entries (upstream GetReadyReplicaCountForReplicaSets).
func TotalReadyReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.ReadyReplicas
		}
	}
	return n
}

// TotalAvailableReplicas is Σ status.availableReplicas over rss, skipping
// nil entries (upstream GetAvailableReplicaCountForReplicaSets).
func TotalAvailableReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.AvailableReplicas
		}
	}
	return n
}

// TotalTerminatingReplicas is Σ status.terminatingReplicas over rss
// (upstream GetTerminatingReplicaCountForReplicaSets). Nil entries and
// ReplicaSets the ReplicaSet controller never synced (observedGeneration 0
// and no count) are skipped; any other ReplicaSet without a count makes the
// total unknown, and the result is nil. An empty list gives 0.
func TotalTerminatingReplicas(rss []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rss {
		switch {
		case rs == nil:
		case rs.Status.TerminatingReplicas == nil && rs.Status.ObservedGeneration == 0:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

// FilterActive returns, in order, the ReplicaSets that are non-nil with
// spec.replicas > 0 (upstream controller.FilterActiveReplicaSets). The
// result is a new slice (nil when nothing is active); rss is untouched.
func FilterActive(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && specReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// NewRSNewReplicas is the size the new ReplicaSet should have next
// (upstream deployment/util.NewRSNewReplicas).
//
// RollingUpdate: maxTotal = D + maxSurge (rounded up); if Σ spec.replicas of
// allRSs already reaches maxTotal the new ReplicaSet keeps its size,
// otherwise it grows by min(maxTotal − Σ, D − its size). Unlike [MaxSurge],
// the raw maxSurge is used: a nil or malformed maxSurge is an error, with
// upstream's message, and the fencepost rule does not apply.
//
// Recreate: D. Any other strategy: an error.
//
// allRSs must include newRS. A nil newRS is an error (upstream panics).
// Invalid but parseable maxSurge values (negative, beyond int32) give
// upstream's number and an error wrapping [ErrIgnoredByUpstream].
// errNilMaxSurge is upstream's error for a nil maxSurge, with the
// function that sets the default.
var errNilMaxSurge = errors.New("rollout: maxSurge: nil value for IntOrString (the API server's default, 25%, is set by defaults.Deployment)")

func NewRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	if d == nil {
		return 0, errors.New("rollout: nil Deployment")
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RollingUpdateDeploymentStrategyType:
		if newRS == nil {
			return 0, errors.New("rollout: nil new ReplicaSet")
		}
		if d.Spec.Strategy.RollingUpdate == nil || d.Spec.Strategy.RollingUpdate.MaxSurge == nil {
			return 0, errNilMaxSurge
		}
		ms := d.Spec.Strategy.RollingUpdate.MaxSurge
		surge, raw, err := scaled(ms, desired(d), true)
		if err != nil {
			return 0, fmt.Errorf("rollout: maxSurge: %w", err)
		}
		n := growNew(desired(d), int32(surge), TotalReplicas(allRSs), specReplicas(newRS))
		if raw >= 0 && surge >= 0 && surge <= math.MaxInt32 {
			return n, nil // the common case, without the call below
		}
		return n, ignored(checkResolved("maxSurge", ms, raw, surge))
	case appsv1.RecreateDeploymentStrategyType:
		return desired(d), nil
	default:
		return 0, fmt.Errorf("deployment type %v isn't supported", d.Spec.Strategy.Type)
	}
}

// growNew is the RollingUpdate arm of NewRSNewReplicas.
func growNew(d, surge, current, newSize int32) int32 {
	maxTotal := d + surge
	if current >= maxTotal {
		return newSize
	}
	return newSize + min(maxTotal-current, d-newSize)
}

// IsSaturated reports whether rs owns every desired replica: its
// spec.replicas, its desired-replicas annotation (parsed with
// strconv.Atoi) and its availableReplicas all equal the Deployment's
// spec.replicas (upstream deployment/util.IsSaturated). A nil rs or an
// annotation that does not parse is not saturated.
func IsSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	n, err := strconv.Atoi(rs.Annotations[DesiredReplicasAnnotation])
	if err != nil {
		return false
	}
	D := desired(d)
	return specReplicas(rs) == D && int32(n) == D && rs.Status.AvailableReplicas == D
}
