package deployment

import (
	"errors"
	"fmt"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// Annotation keys used in this package's output.
const (
	revisionAnnotation        = rollout.RevisionAnnotation
	revisionHistoryAnnotation = rollout.RevisionHistoryAnnotation
)

// State is the snapshot [Sync] decides from. Sync never modifies it: every
// object reachable from it is treated as read-only, as objects from an
// informer cache must be.
type State struct {
	// Deployment is the Deployment to sync. It must not be nil.
	Deployment *appsv1.Deployment
	// ReplicaSets are the ReplicaSets of the Deployment's namespace, as
	// listed from a cache (every one of them, like upstream's lister call;
	// ReplicaSets owned by other controllers are harmless). Sync claims
	// them itself, as a pure decision: it adopts matching orphans and
	// releases owned ReplicaSets that no longer match, emitting
	// [AdoptReplicaSet] and [ReleaseReplicaSet] actions, and decides as if
	// those patches succeeded. It also uses the list to detect hash
	// collisions.
	ReplicaSets []*appsv1.ReplicaSet
	// Pods groups pods by the UID of the ReplicaSet that controls them,
	// whatever their phase (upstream's podMap). Only the Recreate strategy
	// reads it, and only for ReplicaSets Sync claims.
	Pods map[types.UID][]*corev1.Pod
	// FeatureGates are the gates to decide with; the zero value is
	// v1.37's defaults. With DeploymentReplicaSetTerminatingReplicas off
	// the status's terminatingReplicas is nil. The Deployment controller
	// consults no other gate.
	FeatureGates features.Gates
	// DeferStatus leaves the status of a plan whose only writes are
	// ReplicaSet scales to the sync their events trigger
	// (ReconcilerConfig.EagerStatus off, a deliberate difference; see
	// [Reconciler.Reconcile]): such a plan has no UpdateStatus.
	DeferStatus bool
}

// errStop ends a sync early without an error: upstream returned an error
// (a hash collision's AlreadyExists) after its last write, and our plan
// stops at the same point; the status write it carries triggers the next
// sync.
var errStop = errors.New("deployment: stop")

// syncer simulates one upstream syncDeployment in memory. Upstream's
// writes become plan actions and are applied to the syncer's working
// copies, so later steps read what earlier steps wrote, as upstream's read
// what the API returned.
type syncer struct {
	orig *appsv1.Deployment // snapshot; read-only
	// d is the working Deployment. It starts as a shallow copy of orig:
	// status conditions and annotations are replaced, never edited in
	// place, and the spec is deep-copied before a rollback edits it.
	d   *appsv1.Deployment
	now metav1.Time
	// statusOpts are what the feature gates change in the status.
	statusOpts rollout.StatusOptions

	namespace []*appsv1.ReplicaSet // State.ReplicaSets; read-only
	pods      map[types.UID][]*corev1.Pod

	// rss are the claimed ReplicaSets in creation order (the order
	// upstream's list has after FindNewReplicaSet sorted it); an entry is
	// replaced, never edited, when the plan writes it. Every change of rss
	// or newIdx goes through touch.
	rss    []*appsv1.ReplicaSet
	newIdx int // index of the new ReplicaSet in rss, -1 if none
	// oldsCache and allCache are olds() and all() since the last touch.
	oldsCache, allCache []*appsv1.ReplicaSet
	// newRSUpdated records that getNewReplicaSet updated the new
	// ReplicaSet's annotations. Upstream returns right after that Update
	// without syncing the Deployment's revision, and every later call in
	// the same sync, reading its stale list, repeats that Update and
	// returns again, so the revision is not synced in this pass.
	newRSUpdated bool
	// deploymentWritten records that the plan updates the Deployment's
	// metadata (a rollback), revision annotation included.
	deploymentWritten bool

	actions      []Action
	requeueAfter time.Duration
}

func newSyncer(s State, now time.Time) (*syncer, error) {
	if s.Deployment == nil {
		return nil, errors.New("deployment: State.Deployment is nil")
	}
	if err := s.FeatureGates.Validate(); err != nil {
		return nil, fmt.Errorf("deployment: State.FeatureGates: %w", err)
	}
	d := new(appsv1.Deployment)
	*d = *s.Deployment
	return &syncer{orig: s.Deployment, d: d, now: metav1.NewTime(now), namespace: s.ReplicaSets, pods: s.Pods, newIdx: -1,
		statusOpts: rollout.StatusOptions{NoTerminatingReplicas: !s.FeatureGates.Enabled(features.DeploymentReplicaSetTerminatingReplicas)}}, nil
}

// desired is the Deployment's spec.replicas.
func (s *syncer) desired() int32 { return replicas(s.d.Spec.Replicas) }

func (s *syncer) emit(a Action) { s.actions = append(s.actions, a) }

func (s *syncer) event(typ, reason, format string, args ...any) {
	s.emit(Event{Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// newRS returns the new ReplicaSet, or nil.
func (s *syncer) newRS() *appsv1.ReplicaSet {
	if s.newIdx < 0 {
		return nil
	}
	return s.rss[s.newIdx]
}

// touch records a change of s.rss or s.newIdx.
func (s *syncer) touch() { s.oldsCache, s.allCache = nil, nil }

// olds returns every claimed ReplicaSet except the new one, in creation
// order (upstream FindOldReplicaSets' "all"). The slice is shared until
// the next touch: callers must not modify it (appending copies: it has no
// spare capacity).
func (s *syncer) olds() []*appsv1.ReplicaSet {
	if s.oldsCache == nil {
		s.olds2()
	}
	return s.oldsCache
}

// all returns the olds followed by the new ReplicaSet, if any (upstream's
// append(oldRSs, newRS), minus the nil entry), shared as olds' is.
func (s *syncer) all() []*appsv1.ReplicaSet {
	if s.allCache == nil {
		s.olds2()
	}
	return s.allCache
}

// olds2 builds both lists in one slice: all is olds plus the new
// ReplicaSet at the end.
func (s *syncer) olds2() {
	out := make([]*appsv1.ReplicaSet, 0, len(s.rss))
	for i, rs := range s.rss {
		if i != s.newIdx {
			out = append(out, rs)
		}
	}
	n := len(out)
	if rs := s.newRS(); rs != nil {
		out = append(out, rs)
	}
	s.oldsCache, s.allCache = out[:n:n], out[:len(out):len(out)]
}

// index returns rs's position in s.rss (by UID, then name), or -1.
func (s *syncer) index(rs *appsv1.ReplicaSet) int {
	for i, r := range s.rss {
		if r == rs {
			return i
		}
	}
	for i, r := range s.rss {
		if r.UID == rs.UID && r.Name == rs.Name {
			return i
		}
	}
	return -1
}

// setStatus replaces the working status.
func (s *syncer) setStatus(st appsv1.DeploymentStatus) { s.d.Status = st }

// setRevision sets the working Deployment's revision annotation (upstream
// SetDeploymentRevision) and reports whether it changed.
func (s *syncer) setRevision(rev string) bool {
	if s.d.Annotations[revisionAnnotation] == rev {
		return false
	}
	// rollout.SetDeploymentRevision on a copy of the annotations alone
	// (it deep-copies the whole Deployment).
	ann := make(map[string]string, len(s.d.Annotations)+1)
	maps.Copy(ann, s.d.Annotations)
	ann[revisionAnnotation] = rev
	s.d.Annotations = ann
	return true
}

// plan assembles the result: the actions, then a status write if the
// working Deployment's status or revision annotation differs from the
// snapshot.
func (s *syncer) plan() Plan {
	p := Plan{Deployment: s.orig, Actions: s.actions, RequeueAfter: s.requeueAfter}
	revisionChanged := !s.deploymentWritten && s.orig.Annotations[revisionAnnotation] != s.d.Annotations[revisionAnnotation]
	if revisionChanged || !statusEqual(&s.orig.Status, &s.d.Status) {
		p.UpdateStatus = s.d
	}
	return p
}
