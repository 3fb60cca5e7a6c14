package cluster

import (
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// Lag is how much of a rollout's wall-clock time went to the environment
// reacting late: controllers and kubelet acting after the event that let
// them act, rather than at once as a zero-latency model has them.
type Lag struct {
	// Total is the sum of the reaction delays on the critical chain (a
	// link can be negative, see ReactionLag).
	Total time.Duration
	// Hops is the number of links in the chain (the update, controller
	// writes, pod creations, readiness and deletions).
	Hops int
}

// Modeled are the delays a rollout model accounts for, which ReactionLag
// does not count as lag.
type Modeled struct {
	// MinReady is the Deployment's minReadySeconds.
	MinReady time.Duration
	// Shutdown is how long a deleted pod is assumed to take to stop.
	Shutdown time.Duration
}

// ReactionLag measures the reaction lag of a rollout that started at
// start (the update) and was seen complete at end, from the recorder's
// entries (the ReplicaSet spec writes, as observed) and the kubelet's pod
// timelines. It walks the chain of causes back from the end:
//
//   - a controller's act (a ReplicaSet spec write, or the completion) was
//     enabled by the latest event before it that could have: a pod
//     turning available (its scheduled Ready time plus MinReady, counted
//     only if the kubelet had sent that status by then), a deleted pod
//     stopped (the kubelet's sight of the deletion plus Shutdown), or the
//     update itself; the act's lag is its time minus that event's, as a
//     zero-latency model times it. With MinReady the API shows a pod
//     available up to a second early (lastTransitionTime is truncated to
//     the second): such a link's lag is negative, the environment having
//     been faster than the model;
//   - a pod's readiness goes back to its binding (ReadyDelay is modeled),
//     the binding to the kubelet's sight of the pod (the bind lag), and
//     the pod's creation to the latest spec write of its ReplicaSet
//     before it (the ReplicaSet controller's lag); a deletion likewise.
//
// Picking the latest possible cause attributes the least lag to each act,
// so Total errs low: the actual duration minus Total is an upper bound
// of the duration the rollout would have taken with no reaction lag.
func ReactionLag(start, end time.Time, entries []Entry, pods []PodTimes, m Modeled) Lag {
	// The spec writes of each ReplicaSet, in order.
	writes := map[string][]time.Time{}
	last := map[string]int32{}
	for _, e := range entries {
		if e.Kind != "rs" || e.Type == watch.Deleted {
			continue
		}
		if prev, ok := last[e.Name]; !ok || prev != e.Spec {
			writes[e.Name] = append(writes[e.Name], e.At)
		}
		last[e.Name] = e.Spec
	}
	// lastWrite is the latest spec write of rs at or before t (after start),
	// or start.
	lastWrite := func(rs string, t time.Time) time.Time {
		at := start
		for _, w := range writes[rs] {
			if !w.After(t) && w.After(at) {
				at = w
			}
		}
		return at
	}
	var lag Lag
	add := func(from, to time.Time) {
		lag.Hops++
		lag.Total += to.Sub(from)
	}
	// available is when the API shows p available: with minReadySeconds,
	// a whole second after the Ready condition's lastTransitionTime, which
	// has one-second resolution.
	available := func(p PodTimes) time.Time {
		if m.MinReady == 0 {
			return p.ReadyDue
		}
		return p.ReadyDue.Truncate(time.Second).Add(m.MinReady)
	}
	used := map[int]bool{}
	t := end
	for range len(pods) + 1 {
		// The cause of the act at t.
		cause, visible, ideal, deletion := -1, start, start, false
		for i, p := range pods {
			if used[i] {
				continue
			}
			if !p.ReadySent.IsZero() && !p.ReadySent.After(t) {
				// On a tie, the later model time: the smaller lag.
				at, due := available(p), p.ReadyDue.Add(m.MinReady)
				if !at.After(t) && (at.After(visible) || at.Equal(visible) && due.After(ideal)) {
					cause, visible, ideal, deletion = i, at, due, false
				}
			}
			if !p.Gone.IsZero() && !p.Gone.After(t) {
				if at := p.Deleting.Add(m.Shutdown); !at.After(t) && at.After(visible) {
					cause, visible, ideal, deletion = i, at, at, true
				}
			}
		}
		add(ideal, t)
		if cause < 0 {
			return lag // the update
		}
		used[cause] = true
		p := pods[cause]
		if deletion {
			w := lastWrite(p.Owner, p.Deleting)
			add(w, p.Deleting)
			t = w
			continue
		}
		add(p.Seen, p.Bound)
		w := lastWrite(p.Owner, p.Seen)
		add(w, p.Seen)
		t = w
	}
	return lag
}
