package rollout

import (
	"errors"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
)

// RollingStep is what one pass of a rolling update does (upstream
// rolloutRolling, minus the I/O).
type RollingStep struct {
	// Scales are the ReplicaSet updates, in the order upstream issues them.
	Scales []Scale
	// ScaledNew is true when the new ReplicaSet is resized (upstream
	// reconcileNewReplicaSet scaled). Scales then holds just that update.
	ScaledNew bool
	// ScaledOld is true when old ReplicaSets are scaled down (upstream
	// reconcileOldReplicaSets returned true).
	ScaledOld bool
}

// Scaled reports whether upstream would end the pass right after the
// Scales, with a status sync and without revision-history cleanup. When
// false, the caller runs [Cleanup] if DeploymentComplete(d, d.Status) — the
// status read at the start of the pass — and then [SyncStatus].
func (s RollingStep) Scaled() bool { return s.ScaledNew || s.ScaledOld }

// Rolling decides one rolling-update step for d, whose new ReplicaSet
// (already created) is newRS and whose other ReplicaSets are oldRSs
// (upstream rolloutRolling with reconcileNewReplicaSet,
// reconcileOldReplicaSets, cleanupUnhealthyReplicas and
// scaleDownOldReplicaSetsForRollingUpdate):
//
//  1. New ReplicaSet: above D it shrinks to D; below D it grows to
//     [NewRSNewReplicas]. If that resizes it, the step ends there.
//  2. Old ReplicaSets (active ones only): with minAvailable = D −
//     MaxUnavailable, at most Σspec(all) − minAvailable − (new's spec −
//     new's available) pods may go. First unhealthy pods (spec −
//     available) are removed, oldest ReplicaSet first; then, if the
//     available pods of the active old and the new ReplicaSets exceed
//     minAvailable, that excess is removed, oldest first. Oldest means
//     creation timestamp, then name.
//
// An error from NewRSNewReplicas ends the step with no Scales, as
// upstream. Upstream swallows an "invalid request to scale down", which
// happens when an old ReplicaSet reports more available replicas than its
// spec (say, just after it was shrunk, before its pods are gone): the
// Scales decided before it are kept, ScaledOld is false (so upstream goes
// on to cleanup and the status sync), and the error, wrapping
// [ErrIgnoredByUpstream], is returned. A nil newRS is an error.
func Rolling(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (RollingStep, error) {
	if d == nil || newRS == nil {
		return RollingStep{}, errors.New("rollout: Rolling needs a Deployment and its new ReplicaSet")
	}
	sc, scErr := newScaler(d)
	all := make([]*appsv1.ReplicaSet, 0, len(oldRSs)+1)
	all = append(append(all, oldRSs...), newRS)

	D, cur := desired(d), specReplicas(newRS)
	var newErr error
	if cur != D {
		target := D
		if cur < D {
			n, err := NewRSNewReplicas(d, all, newRS)
			if fatal(err) {
				return RollingStep{}, err
			}
			target, newErr = n, err
		}
		if target != cur {
			return RollingStep{Scales: sc.lazy(nil, newRS, cur, target), ScaledNew: true}, joinIgnored(scErr, newErr)
		}
	}
	scales, scaled, err := scaleDownOld(d, sc, all, FilterActive(oldRSs), newRS)
	return RollingStep{Scales: scales, ScaledOld: scaled}, joinIgnored(scErr, newErr, err)
}

// sizedRS is an old ReplicaSet with its size as updated within the step.
type sizedRS struct {
	rs   *appsv1.ReplicaSet
	spec int32
}

type sizedByCreation []sizedRS

func (o sizedByCreation) Len() int           { return len(o) }
func (o sizedByCreation) Swap(i, j int)      { o[i], o[j] = o[j], o[i] }
func (o sizedByCreation) Less(i, j int) bool { return creationLess(o[i].rs, o[j].rs) }

// scaleDownOld is upstream reconcileOldReplicaSets over the active old
// ReplicaSets.
func scaleDownOld(d *appsv1.Deployment, sc scaler, all, activeOld []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) ([]Scale, bool, error) {
	if TotalReplicas(activeOld) == 0 {
		return nil, false, nil
	}
	maxUnavailable, muErr := MaxUnavailable(d)
	minAvailable := desired(d) - maxUnavailable
	newUnavailable := specReplicas(newRS) - newRS.Status.AvailableReplicas
	maxScaledDown := TotalReplicas(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return nil, false, muErr
	}

	olds := make(sizedByCreation, len(activeOld))
	for i, rs := range activeOld {
		olds[i] = sizedRS{rs: rs, spec: specReplicas(rs)}
	}
	var scales []Scale

	// Unhealthy replicas first (kubernetes#16737): they do not count as
	// available, so removing them costs no availability.
	sort.Sort(olds)
	var cleaned int32
	for i := range olds {
		o := &olds[i]
		if cleaned >= maxScaledDown {
			break
		}
		avail := o.rs.Status.AvailableReplicas
		if o.spec == 0 || o.spec == avail {
			continue
		}
		n := min(maxScaledDown-cleaned, o.spec-avail)
		if to := o.spec - n; to > o.spec {
			return scales, false, joinIgnored(muErr, invalidScaleDown("when cleaning up unhealthy replicas", o.rs, o.spec, to))
		}
		scales = sc.lazy(scales, o.rs, o.spec, o.spec-n)
		o.spec -= n
		cleaned += n
	}

	// Then surplus available replicas, keeping minAvailable.
	available := newRS.Status.AvailableReplicas
	for _, o := range olds {
		available += o.rs.Status.AvailableReplicas
	}
	var scaledDown int32
	if available > minAvailable {
		sort.Sort(olds)
		budget := available - minAvailable
		for i := range olds {
			o := &olds[i]
			if scaledDown >= budget {
				break
			}
			if o.spec == 0 {
				continue
			}
			n := min(o.spec, budget-scaledDown)
			if to := o.spec - n; to > o.spec {
				return scales, false, joinIgnored(muErr, invalidScaleDown("when scaling down old RS", o.rs, o.spec, to))
			}
			scales = sc.lazy(scales, o.rs, o.spec, o.spec-n)
			o.spec -= n
			scaledDown += n
		}
	}
	return scales, cleaned+scaledDown > 0, muErr
}

// invalidScaleDown is upstream's error for a "scale-down" that would grow
// a ReplicaSet; upstream swallows it.
func invalidScaleDown(when string, rs *appsv1.ReplicaSet, from, to int32) error {
	return ignored(fmt.Errorf("%s, got invalid request to scale down %s/%s %d -> %d", when, rs.Namespace, rs.Name, from, to))
}
