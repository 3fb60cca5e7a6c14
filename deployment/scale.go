package deployment

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// applyScale turns a rollout decision into a plan action (and, for a
// resize, its ScalingReplicaSet event), and applies it to the working
// ReplicaSets so later steps read the result, as upstream reads the object
// its Update returned.
func (s *syncer) applyScale(sc rollout.Scale) {
	out := sc.Scaled()
	i := s.indexByName(sc.ReplicaSet.Name)
	if i >= 0 {
		cur := s.rss[i]
		out.Generation = cur.Generation
		out.Status = cur.Status // the scale was decided on a copy (see unobservedAvailability)
		if replicas(cur.Spec.Replicas) != sc.To {
			// The API server bumps the generation of a spec change; later
			// steps of this sync (history cleanup) must see the ReplicaSet
			// as not yet observed by its controller.
			out.Generation++
		}
		s.rss[i] = out
		s.touch()
	}
	s.emit(ScaleReplicaSet{ReplicaSet: out, From: sc.From, To: sc.To})
	if typ, reason, msg, ok := sc.Event(); ok {
		s.emit(Event{Type: typ, Reason: reason, Message: msg})
	}
}

func (s *syncer) applyScales(scales []rollout.Scale) {
	for _, sc := range scales {
		s.applyScale(sc)
	}
}

// indexByName returns the position of the working ReplicaSet called name,
// or -1.
func (s *syncer) indexByName(name string) int {
	for i, rs := range s.rss {
		if rs.Name == name {
			return i
		}
	}
	return -1
}

// scale is upstream scale(), used for paused Deployments and scaling
// events; the decision is rollout.Proportional's.
func (s *syncer) scale() error {
	newRS, olds := s.newRS(), s.olds()
	if rs := rollout.FindActiveOrLatest(newRS, olds); rs != nil && s.staleDesired(rs) {
		// Deviation (defect fixed): the only active ReplicaSet already has
		// D replicas, but its desired-replicas annotation is stale.
		// Upstream returns without a write, so that annotation makes every
		// later sync a scaling event that does nothing, and a new template
		// never rolls out. Refresh the annotations.
		n := replicas(rs.Spec.Replicas)
		surge, _ := rollout.MaxSurge(s.d) // a malformed value reads as 0, as upstream
		s.applyScale(rollout.Scale{ReplicaSet: rs, From: n, To: n, DesiredReplicas: s.desired(), MaxReplicas: s.desired() + surge})
		return nil
	}
	scales, err := rollout.Proportional(s.d, newRS, olds)
	if err != nil && !isIgnored(err) {
		return err
	}
	s.applyScales(scales)
	return nil
}

// staleDesired reports whether rs is active at exactly D replicas with a
// valid desired-replicas annotation other than D.
func (s *syncer) staleDesired(rs *appsv1.ReplicaSet) bool {
	n, ok, _ := rollout.AnnotatedDesiredReplicas(rs)
	return replicas(rs.Spec.Replicas) > 0 && replicas(rs.Spec.Replicas) == s.desired() && ok && n != s.desired()
}
