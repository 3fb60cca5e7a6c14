package replicaset

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/features"
)

// PodsToDelete returns the n pods of pods that upstream would delete first,
// in deletion order, as a new slice; pods is not modified. When n covers
// every pod, the pods are returned in their input order without ranking;
// otherwise they are ranked with [RankForDeletion]. n is clamped to
// [0, len(pods)] (upstream getPodsToDelete, which sorts its argument in
// place; this function does not). A nil entry in pods or related is an
// error.
func PodsToDelete(pods, related []*corev1.Pod, n int, now time.Time) ([]*corev1.Pod, error) {
	if err := checkPods("PodsToDelete", "pods", pods); err != nil {
		return nil, err
	}
	if err := checkPods("PodsToDelete", "related", related); err != nil {
		return nil, err
	}
	return podsToDelete(pods, related, n, now, true), nil
}

// podsToDelete is [PodsToDelete] without the checks; costs is the
// PodDeletionCost gate.
func podsToDelete(pods, related []*corev1.Pod, n int, now time.Time, costs bool) []*corev1.Pod {
	n = max(0, min(n, len(pods)))
	if n == len(pods) {
		return slices.Clone(pods)
	}
	return rankForDeletion(pods, related, now, costs)[:n]
}

// RankForDeletion returns a copy of pods sorted with the most deletable pod
// first; pods is not modified. Each pod's co-location rank is computed from
// related as in [CoLocationRanks], and pairs are compared with
// [LessForDeletion]. The sort is the same algorithm (sort.Sort) on the same
// comparison as upstream, so for the same input order the output order is
// identical, ties included (upstream getPodsRankedByRelatedPodsOnSameNode
// followed by sort.Sort(controller.ActivePodsWithRanks)). A nil entry in
// pods or related is an error.
func RankForDeletion(pods, related []*corev1.Pod, now time.Time) ([]*corev1.Pod, error) {
	if err := checkPods("RankForDeletion", "pods", pods); err != nil {
		return nil, err
	}
	if err := checkPods("RankForDeletion", "related", related); err != nil {
		return nil, err
	}
	return rankForDeletion(pods, related, now, true), nil
}

// RankForDeletionWith is [RankForDeletion] with the feature gates of
// gates: with PodDeletionCost off, rule 4 of [LessForDeletion] (the
// pod-deletion-cost annotation) is skipped, as upstream skips it then.
func RankForDeletionWith(pods, related []*corev1.Pod, now time.Time, gates features.Gates) ([]*corev1.Pod, error) {
	if err := gates.Validate(); err != nil {
		return nil, fmt.Errorf("replicaset: RankForDeletionWith: %w", err)
	}
	if err := checkPods("RankForDeletionWith", "pods", pods); err != nil {
		return nil, err
	}
	if err := checkPods("RankForDeletionWith", "related", related); err != nil {
		return nil, err
	}
	return rankForDeletion(pods, related, now, gates.Enabled(features.PodDeletionCost)), nil
}

// rankForDeletion is [RankForDeletion] without the checks; costs is the
// PodDeletionCost gate.
func rankForDeletion(pods, related []*corev1.Pod, now time.Time, costs bool) []*corev1.Pod {
	ranks := coLocationRanks(pods, related)
	keys := make([]rankKey, len(pods))
	s := rankSorter{now: !now.IsZero(), keys: make([]*rankKey, len(pods))}
	for i, p := range pods {
		keys[i] = newRankKey(p, ranks[i], now, costs)
		s.keys[i] = &keys[i]
	}
	sort.Sort(s)
	out := make([]*corev1.Pod, len(pods))
	for i, k := range s.keys {
		out[i] = k.pod
	}
	return out
}

// CoLocationRanks returns, for each pod of pods, the number of active pods
// in related that run on the same node name (the empty node name counts as
// a node too). related is normally every pod selected by the ReplicaSets
// that share pods' owner, and is empty for a ReplicaSet without a controller
// (upstream getPodsRankedByRelatedPodsOnSameNode). A nil entry in pods or
// related is an error.
func CoLocationRanks(pods, related []*corev1.Pod) ([]int, error) {
	if err := checkPods("CoLocationRanks", "pods", pods); err != nil {
		return nil, err
	}
	if err := checkPods("CoLocationRanks", "related", related); err != nil {
		return nil, err
	}
	return coLocationRanks(pods, related), nil
}

// coLocationRanks is [CoLocationRanks] without the checks.
func coLocationRanks(pods, related []*corev1.Pod) []int {
	ranks := make([]int, len(pods))
	if len(related) == 0 {
		return ranks
	}
	onNode := make(map[string]int)
	for _, p := range related {
		if IsPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	for i, p := range pods {
		ranks[i] = onNode[p.Spec.NodeName]
	}
	return ranks
}

// LessForDeletion reports whether pod a, with co-location rank rankA, should
// be deleted before pod b. The rules, first difference wins:
//
//  1. an unassigned pod before an assigned one;
//  2. phase Pending (and any unlisted phase) before Unknown before Running;
//  3. a not-ready pod before a ready one;
//  4. the lower pod-deletion-cost annotation first (invalid values count
//     as 0);
//  5. the higher co-location rank first;
//  6. both ready with different ready times: the more recently ready first,
//     comparing floor(log2(now − t)) buckets and breaking equal buckets by
//     the lower UID; a zero now or a zero time compares plainly, a zero time
//     counting as the most recent;
//  7. the higher maximum container restart count first, then the higher
//     maximum restart count of restartable (sidecar) init containers;
//  8. different creation times: as in 6, the newer first.
//
// Otherwise it returns false. The log-scale buckets are always on, as in
// v1.37 where the LogarithmicScaleDown gate was removed (upstream
// controller.ActivePodsWithRanks.Less), and so is rule 4, the
// PodDeletionCost gate at its default ([RankForDeletionWith] takes the
// gates). A nil pod comes before any other (nothing is lost by deleting
// it); two nil pods are equal.
func LessForDeletion(a, b *corev1.Pod, rankA, rankB int, now time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b != nil
	}
	ka, kb := newRankKey(a, rankA, now, true), newRankKey(b, rankB, now, true)
	return lessKey(&ka, &kb, !now.IsZero())
}

// rankKey holds every input of the deletion comparison for one pod, computed
// once so that sorting does not re-scan conditions or re-parse annotations.
type rankKey struct {
	pod        *corev1.Pod
	uid        types.UID
	unassigned bool
	phase      int
	ready      bool
	cost       int32
	rank       int
	readyTime  time.Time // zero unless ready
	readyLog   int64
	restarts   int
	sidecars   int
	created    time.Time
	createdLog int64
}

// newRankKey computes the key of p; costs is the PodDeletionCost gate
// (off, every pod's cost is 0, so rule 4 never decides).
func newRankKey(p *corev1.Pod, rank int, now time.Time, costs bool) rankKey {
	k := rankKey{
		pod:        p,
		uid:        p.UID,
		unassigned: p.Spec.NodeName == "",
		phase:      phaseOrdinal(p.Status.Phase),
		rank:       rank,
		created:    p.CreationTimestamp.Time,
	}
	if costs {
		k.cost = deletionCost(p.Annotations)
	}
	if c := readyCondition(p); c != nil && c.Status == corev1.ConditionTrue {
		k.ready = true
		k.readyTime = c.LastTransitionTime.Time
	}
	k.restarts, k.sidecars = maxRestarts(p)
	k.readyLog = logBucket(k.readyTime, now)
	k.createdLog = logBucket(k.created, now)
	return k
}

// lessKey is LessForDeletion over precomputed keys. scaled is false when
// now is zero, which turns the log-scale comparison off.
func lessKey(a, b *rankKey, scaled bool) bool {
	if a.unassigned != b.unassigned {
		return a.unassigned
	}
	if a.phase != b.phase {
		return a.phase < b.phase
	}
	if a.ready != b.ready {
		return !a.ready
	}
	if a.cost != b.cost {
		return a.cost < b.cost
	}
	if a.rank != b.rank {
		return a.rank > b.rank
	}
	if a.ready && b.ready && !a.readyTime.Equal(b.readyTime) {
		if !scaled || a.readyTime.IsZero() || b.readyTime.IsZero() {
			return afterOrZero(a.readyTime, b.readyTime)
		}
		if a.readyLog == b.readyLog {
			return a.uid < b.uid
		}
		return a.readyLog < b.readyLog
	}
	if a.restarts != b.restarts {
		return a.restarts > b.restarts
	}
	if a.sidecars != b.sidecars {
		return a.sidecars > b.sidecars
	}
	if !a.created.Equal(b.created) {
		if !scaled || a.created.IsZero() || b.created.IsZero() {
			return afterOrZero(a.created, b.created)
		}
		if a.createdLog == b.createdLog {
			return a.uid < b.uid
		}
		return a.createdLog < b.createdLog
	}
	return false
}

// rankSorter is a sort.Interface over keys; its Less and Swap mirror
// upstream's ActivePodsWithRanks so sort.Sort makes the same moves.
type rankSorter struct {
	now  bool
	keys []*rankKey
}

func (s rankSorter) Len() int           { return len(s.keys) }
func (s rankSorter) Swap(i, j int)      { s.keys[i], s.keys[j] = s.keys[j], s.keys[i] }
func (s rankSorter) Less(i, j int) bool { return lessKey(s.keys[i], s.keys[j], s.now) }

// afterOrZero reports whether t1 is after t2, a zero time counting as later
// than any other.
func afterOrZero(t1, t2 time.Time) bool {
	if t1.IsZero() || t2.IsZero() {
		return t1.IsZero()
	}
	return t1.After(t2)
}

// logBucket returns floor(log2(now − t)) in nanoseconds, computed in float64
// exactly as upstream's logarithmicRankDiff, or −1 when now − t ≤ 0.
func logBucket(t, now time.Time) int64 {
	d := now.Sub(t)
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

// phaseOrdinal orders phases for deletion: Pending 0, Unknown 1, Running 2;
// every other phase is 0.
func phaseOrdinal(p corev1.PodPhase) int {
	switch p {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 0
}

// DeletionCost returns the value of the pod-deletion-cost annotation, or 0
// when it is absent or invalid: empty, a leading "+", a leading zero other
// than "0" itself, or outside int32 (upstream
// helper.GetDeletionCostFromPodAnnotations with its error dropped). A nil
// pod costs 0.
func DeletionCost(p *corev1.Pod) int32 {
	if p == nil {
		return 0
	}
	return deletionCost(p.Annotations)
}

func deletionCost(annotations map[string]string) int32 {
	v, ok := annotations[PodDeletionCostAnnotation]
	if !ok || v == "" {
		return 0
	}
	if c := v[0]; !(c == '-' || (c >= '1' && c <= '9') || v == "0") {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// maxRestarts returns the highest restart count among p's regular
// containers and among its restartable (restartPolicy Always) init
// containers.
func maxRestarts(p *corev1.Pod) (regular, sidecar int) {
	for i := range p.Status.ContainerStatuses {
		regular = max(regular, int(p.Status.ContainerStatuses[i].RestartCount))
	}
	for i := range p.Status.InitContainerStatuses {
		st := &p.Status.InitContainerStatuses[i]
		if isSidecar(p, st.Name) {
			sidecar = max(sidecar, int(st.RestartCount))
		}
	}
	return regular, sidecar
}

func isSidecar(p *corev1.Pod, name string) bool {
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.Name == name && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return true
		}
	}
	return false
}
