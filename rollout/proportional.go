package rollout

import (
	"errors"
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
)

// Proportional decides how a Deployment's ReplicaSets are resized when
// spec.replicas changes mid-rollout or while paused (upstream
// DeploymentController.scale):
//
//  1. If at most one ReplicaSet is active ([FindActiveOrLatest]), that one
//     is scaled to D (nothing if it already is).
//  2. Else, if newRS [IsSaturated], every active old ReplicaSet goes to 0,
//     newest first.
//  3. Else, for RollingUpdate only, toAdd = (D + MaxSurge, or 0 when D = 0)
//     − Σ spec of the active ReplicaSets is shared out in
//     [SortBySizeNewer] order when growing, [SortBySizeOlder] when
//     shrinking: each gets [Proportion], and whatever is left over goes to
//     the first (largest) one, floored at 0. Every active ReplicaSet whose
//     size or replicas annotations change gets a Scale, in that order.
//
// Sizes are tracked by ReplicaSet name, as upstream. Neither newRS nor
// oldRSs is modified. A malformed maxSurge or maxUnavailable, or an invalid
// max-replicas annotation, is reported as in [MaxSurge].
func Proportional(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) ([]Scale, error) {
	if d == nil {
		return nil, errors.New("rollout: nil Deployment")
	}
	sc, err := newScaler(d)
	D := desired(d)
	if rs := FindActiveOrLatest(newRS, oldRSs); rs != nil {
		return sc.lazy(nil, rs, specReplicas(rs), D), err
	}
	olds := newestFirst(oldRSs)
	if IsSaturated(d, newRS) {
		var scales []Scale
		for _, rs := range FilterActive(olds) {
			scales = sc.lazy(scales, rs, specReplicas(rs), 0)
		}
		return scales, err
	}
	if !IsRollingUpdate(d) {
		return nil, err
	}

	active := FilterActive(append(olds, newRS))
	var allowed int32
	if D > 0 {
		allowed = sc.max
	}
	toAdd := allowed - TotalReplicas(active)
	switch {
	case toAdd > 0:
		sort.Sort(bySizeNewer(active))
	case toAdd < 0:
		sort.Sort(bySizeOlder(active))
	}

	errs := []error{err}
	sizes := make(map[string]int32, len(active))
	var added int32
	for _, rs := range active {
		if toAdd == 0 {
			sizes[rs.Name] = specReplicas(rs)
			continue
		}
		p, perr := Proportion(rs, d, toAdd, added)
		errs = append(errs, perr)
		sizes[rs.Name] = specReplicas(rs) + p
		added += p
	}
	var scales []Scale
	for i, rs := range active {
		if i == 0 && toAdd != 0 {
			sizes[rs.Name] += toAdd - added
			if sizes[rs.Name] < 0 {
				sizes[rs.Name] = 0
			}
		}
		scales = sc.forced(scales, rs, sizes[rs.Name])
	}
	return scales, joinIgnored(errs...)
}

// Proportion is how many of toAdd replicas (negative: to remove) rs gets,
// given that added have already been handed out (upstream
// GetReplicaSetProportion): 0 for a nil or empty rs (it never grows from
// zero) or when nothing is left; otherwise proportionOf clamped to what is
// left — min when growing, max when shrinking.
func Proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) (int32, error) {
	if rs == nil || specReplicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0, nil
	}
	f, err := proportionOf(rs, d)
	left := toAdd - added
	if toAdd > 0 {
		return min(f, left), err
	}
	return max(f, left), err
}

// proportionOf is rs's proportional share of a resize (upstream
// getReplicaSetFraction): −spec when D = 0; otherwise
// round(spec × (D + MaxSurge) / oldMax) − spec, where oldMax is rs's
// max-replicas annotation, or d's status.replicas if that is missing,
// invalid or 0 (and the share is 0 if that is 0 too). The product is taken
// in int32 and the quotient in float64, rounded half away from zero, as
// upstream. Annotation and maxSurge problems are reported as in [MaxSurge].
func proportionOf(rs *appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	spec := specReplicas(rs)
	D := desired(d)
	if D == 0 {
		return -spec, nil
	}
	surge, serr := MaxSurge(d)
	newMax := D + surge
	oldMax, ok, aerr := annotatedMaxReplicas(rs)
	if !ok || oldMax == 0 {
		oldMax = d.Status.Replicas
		if oldMax == 0 {
			return 0, joinIgnored(serr, aerr)
		}
	}
	size := float64(spec*newMax) / float64(oldMax)
	return int32(math.Round(size)) - spec, joinIgnored(serr, aerr)
}

// IsScalingEvent reports whether d's spec.replicas changed since its
// active ReplicaSets were last sized: some active one (of oldRSs and
// newRS) has a valid desired-replicas annotation different from D
// (upstream isScalingEvent, without its side effects). Invalid annotations
// are skipped, as upstream, and reported in err (wrapping
// [ErrIgnoredByUpstream]).
func IsScalingEvent(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (bool, error) {
	var errs []error
	found := false
	for _, rs := range oldRSs {
		found = scalingEventIn(rs, desired(d), &errs) || found
	}
	found = scalingEventIn(newRS, desired(d), &errs) || found
	return found, joinIgnored(errs...)
}

func scalingEventIn(rs *appsv1.ReplicaSet, D int32, errs *[]error) bool {
	if rs == nil || specReplicas(rs) <= 0 {
		return false
	}
	n, ok, err := AnnotatedDesiredReplicas(rs)
	if err != nil {
		*errs = append(*errs, err)
	}
	return ok && n != D
}
