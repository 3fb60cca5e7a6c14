package planner

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// Trace is a sequence of observed states of one Deployment and its
// ReplicaSets, oldest first. [Simulate] returns one (see [Timeline.Trace]) and
// [TraceFrom] builds one from objects recorded on a real cluster.
type Trace []Step

// Step is one observed state of a rollout.
type Step struct {
	// Time is when the state was observed.
	Time time.Time
	// Replicas, Generation and Paused are the Deployment's spec.replicas,
	// metadata.generation and spec.paused.
	Replicas   int32
	Generation int64
	Paused     bool
	// Revision is the Deployment's revision annotation (0 if missing).
	Revision int64
	// Status is the Deployment's status, conditions included.
	Status appsv1.DeploymentStatus
	// ReplicaSets are the Deployment's ReplicaSets, lowest revision first.
	ReplicaSets []ReplicaSetState
	// ScalingEvent is true when spec.replicas changed since the previous
	// step, or some active ReplicaSet of the previous step was sized for
	// another spec.replicas (its desired-replicas annotation, upstream's
	// isScalingEvent): the controller may be scaling proportionally.
	ScalingEvent bool
	// Events are the events recorded against the Deployment since the
	// previous step (planner timelines only).
	Events []string
}

// ReplicaSetState is one ReplicaSet in a [Step].
type ReplicaSetState struct {
	Name     string
	Revision int64
	// New is true for the ReplicaSet whose template matches the
	// Deployment's (rollout.FindNewReplicaSet).
	New bool
	// Spec is spec.replicas; the other counts come from the status.
	Spec, Replicas, Ready, Available, Terminating int32
}

// Snapshot is one observation of a Deployment and the ReplicaSets of its
// namespace, as a watcher or a poller would record them.
type Snapshot struct {
	Time        time.Time
	Deployment  *appsv1.Deployment
	ReplicaSets []*appsv1.ReplicaSet
}

// TraceFrom turns snapshots (oldest first) into a Trace. Only the
// ReplicaSets the Deployment controls (by owner UID) are kept; when the
// Deployment has no UID (a hand-built object), those its selector would
// have to match are not filtered at all. A revision annotation that does
// not parse counts as 0, as upstream sorting treats it. Snapshots are
// not modified. A snapshot without a Deployment is an error.
func TraceFrom(snapshots []Snapshot) (Trace, error) {
	b := TraceBuilder{trace: make(Trace, 0, len(snapshots))}
	for _, s := range snapshots {
		if err := b.Add(s); err != nil {
			return nil, err
		}
	}
	return b.Trace(), nil
}

// A TraceBuilder builds the Trace of snapshots taken one at a time, as a
// watcher takes them: after each Add, Trace is what [TraceFrom] returns
// for the snapshots added so far, at the cost of the new one alone (a
// step depends only on its snapshot and the one before). The zero value
// is an empty trace.
type TraceBuilder struct {
	trace Trace
	prev  []*appsv1.ReplicaSet // the ReplicaSets of the last snapshot added
}

// Add adds the next snapshot, which must have a Deployment. It is not
// modified, and must not be while the builder is in use.
func (b *TraceBuilder) Add(s Snapshot) error {
	i := len(b.trace)
	if s.Deployment == nil {
		return fmt.Errorf("planner: snapshot %d has no Deployment", i)
	}
	d := s.Deployment
	rss := s.ReplicaSets
	if d.UID != "" {
		rss = rollout.OwnedReplicaSets(d, rss)
	}
	st := stepFrom(s.Time, d, rss)
	// A scaling event is judged on the ReplicaSets the controller saw
	// when it learnt the current spec.replicas: the previous step's.
	before := rss
	if i > 0 {
		before = b.prev
	}
	newRS := rollout.FindNewReplicaSet(d, before)
	scaling, err := rollout.IsScalingEvent(d, newRS, othersThan(newRS, before))
	if err != nil {
		scaling = false // only invalid annotations, which upstream skips as well
	}
	st.ScalingEvent = scaling || (i > 0 && st.Replicas != b.trace[i-1].Replicas)
	b.trace = append(b.trace, st)
	b.prev = rss
	return nil
}

// Trace returns the trace so far. Later Adds append to it without
// changing its steps.
func (b *TraceBuilder) Trace() Trace { return b.trace[:len(b.trace):len(b.trace)] }

// stepFrom records d and its ReplicaSets rss at time t; ScalingEvent and
// Events are left for the caller.
func stepFrom(t time.Time, d *appsv1.Deployment, rss []*appsv1.ReplicaSet) Step {
	st := Step{
		Time:       t,
		Replicas:   replicas(d.Spec.Replicas),
		Generation: d.Generation,
		Paused:     d.Spec.Paused,
		Revision:   revision(d),
		Status:     *d.Status.DeepCopy(),
	}
	newRS := rollout.FindNewReplicaSet(d, rss)
	for _, rs := range rss {
		if rs == nil {
			continue
		}
		var term int32
		if rs.Status.TerminatingReplicas != nil {
			term = *rs.Status.TerminatingReplicas
		}
		st.ReplicaSets = append(st.ReplicaSets, ReplicaSetState{
			Name:        rs.Name,
			Revision:    revision(rs),
			New:         newRS != nil && rs.UID == newRS.UID && rs.Name == newRS.Name,
			Spec:        replicas(rs.Spec.Replicas),
			Replicas:    rs.Status.Replicas,
			Ready:       rs.Status.ReadyReplicas,
			Available:   rs.Status.AvailableReplicas,
			Terminating: term,
		})
	}
	slices.SortStableFunc(st.ReplicaSets, func(a, b ReplicaSetState) int {
		return cmp.Or(cmp.Compare(a.Revision, b.Revision), cmp.Compare(a.Name, b.Name))
	})
	return st
}

// othersThan returns the ReplicaSets of rss that are not newRS (by UID,
// as rollout.FindOldReplicaSets tells them apart), nil ones left out.
func othersThan(newRS *appsv1.ReplicaSet, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && (newRS == nil || rs.UID != newRS.UID) {
			out = append(out, rs)
		}
	}
	return out
}

// revision is obj's revision annotation, 0 when missing or unparseable.
func revision(obj metav1.Object) int64 {
	n, err := rollout.Revision(obj)
	if err != nil {
		return 0 // upstream's revision sort treats it the same way
	}
	return n
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1 // the API default, as the controllers read a nil count
	}
	return *p
}

// Totals returns Σ spec.replicas, Σ status.replicas (pods that are not
// terminating), Σ available and Σ terminating over the step's ReplicaSets.
func (s Step) Totals() (spec, pods, available, terminating int32) {
	for _, rs := range s.ReplicaSets {
		spec += rs.Spec
		pods += rs.Replicas
		available += rs.Available
		terminating += rs.Terminating
	}
	return spec, pods, available, terminating
}

// ReplicaSet returns the state of the ReplicaSet called name and whether
// the step has it.
func (s Step) ReplicaSet(name string) (ReplicaSetState, bool) {
	for _, rs := range s.ReplicaSets {
		if rs.Name == name {
			return rs, true
		}
	}
	return ReplicaSetState{}, false
}
