package replicaset_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

func TestLessForDeletion(t *testing.T) {
	base := []podOpt{onNode("n1"), readySince(t0.Add(-time.Hour))}
	pod := func(name string, opts ...podOpt) *corev1.Pod {
		return newPod(name, append(append([]podOpt{}, base...), opts...)...)
	}
	cases := []struct {
		name         string
		a, b         *corev1.Pod // a is expected first, unless tie
		rankA, rankB int
		zeroNow      bool
		tie          bool
	}{
		{name: "unassigned first", a: pod("a", onNode("")), b: pod("b")},
		{name: "pending before unknown", a: pod("a", inPhase(corev1.PodPending)), b: pod("b", inPhase(corev1.PodUnknown))},
		{name: "unknown before running", a: pod("a", inPhase(corev1.PodUnknown)), b: pod("b")},
		{name: "succeeded ranks as pending", a: pod("a", inPhase(corev1.PodSucceeded)), b: pod("b", inPhase(corev1.PodUnknown))},
		{name: "empty phase ranks as pending", a: pod("a", inPhase("")), b: pod("b")},
		{name: "not ready first", a: newPod("a", onNode("n1")), b: pod("b")},
		{name: "ready=false condition is not ready", a: newPod("a", onNode("n1"), notReady()), b: pod("b")},
		{name: "lower cost first", a: pod("a", withCost("-5")), b: pod("b", withCost("0"))},
		{name: "plus sign is invalid (0)", a: pod("a", withCost("+3")), b: pod("b", withCost("1"))},
		{name: "leading zero is invalid (0)", a: pod("a", withCost("-1")), b: pod("b", withCost("007"))},
		{name: "int32 overflow is invalid (0)", a: pod("a", withCost("2147483648")), b: pod("b", withCost("5"))},
		{name: "cost beats rank", a: pod("a"), b: pod("b", withCost("1")), rankA: 0, rankB: 9},
		{name: "higher rank first", a: pod("a"), b: pod("b"), rankA: 3, rankB: 1},
		{name: "rank beats ready time", a: pod("a", readySince(t0.Add(-48*time.Hour))), b: pod("b", readySince(t0.Add(-time.Minute))), rankA: 2, rankB: 1},
		{name: "recently ready first", a: newPod("a", onNode("n1"), readySince(t0.Add(-time.Minute))), b: pod("b")},
		{
			name: "same ready bucket: lower UID first",
			a:    newPod("a", onNode("n1"), readySince(t0.Add(-61*time.Second)), withUID("1")),
			b:    newPod("b", onNode("n1"), readySince(t0.Add(-60*time.Second)), withUID("2")),
		},
		{
			name:    "zero now: plain ready time",
			a:       newPod("a", onNode("n1"), readySince(t0.Add(-60*time.Second)), withUID("2")),
			b:       newPod("b", onNode("n1"), readySince(t0.Add(-61*time.Second)), withUID("1")),
			zeroNow: true,
		},
		{name: "zero ready time first", a: newPod("a", onNode("n1"), readySince(time.Time{})), b: pod("b")},
		{name: "more restarts first", a: pod("a", withRestarts(5)), b: pod("b", withRestarts(1))},
		{name: "restarts beat age", a: pod("a", withRestarts(1), createdAt(t0.Add(-48*time.Hour))), b: pod("b", createdAt(t0.Add(-time.Minute)))},
		{name: "sidecar restarts break restart ties", a: pod("a", withSidecarRestarts(2)), b: pod("b", withSidecarRestarts(1))},
		{name: "plain init restarts do not count", a: pod("a", withSidecarRestarts(1)), b: pod("b", withSidecarRestarts(0), withRestarts(0))},
		{name: "newer first", a: pod("a", createdAt(t0.Add(-time.Minute))), b: pod("b", createdAt(t0.Add(-time.Hour)))},
		{
			name: "same creation bucket: lower UID first",
			a:    pod("a", createdAt(t0.Add(-61*time.Second)), withUID("1")),
			b:    pod("b", createdAt(t0.Add(-60*time.Second)), withUID("2")),
		},
		{name: "zero creation time first", a: pod("a", createdAt(time.Time{})), b: pod("b")},
		{name: "identical pods tie", a: pod("a"), b: pod("b"), tie: true},
		{name: "same creation time ties despite UIDs", a: pod("a", withUID("1")), b: pod("b", withUID("2")), tie: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			if tc.zeroNow {
				now = time.Time{}
			}
			ab := replicaset.LessForDeletion(tc.a, tc.b, tc.rankA, tc.rankB, now)
			ba := replicaset.LessForDeletion(tc.b, tc.a, tc.rankB, tc.rankA, now)
			if ab != !tc.tie || ba {
				t.Errorf("LessForDeletion(a, b) = %v, (b, a) = %v; want %v, false", ab, ba, !tc.tie)
			}
			if got, want := ab, naiveLess(tc.a, tc.b, tc.rankA, tc.rankB, now); got != want {
				t.Errorf("LessForDeletion(a, b) = %v; reference says %v", got, want)
			}
		})
	}
}

func TestRankForDeletion(t *testing.T) {
	pods := []*corev1.Pod{
		newPod("ready-old", onNode("n1"), readySince(t0.Add(-10*time.Hour))),
		newPod("pending", inPhase(corev1.PodPending)),
		newPod("ready-new", onNode("n2"), readySince(t0.Add(-time.Minute))),
		newPod("not-ready", onNode("n1")),
		newPod("colocated", onNode("n3"), readySince(t0.Add(-10*time.Hour))),
	}
	related := append([]*corev1.Pod{
		newPod("other-1", onNode("n3")), newPod("other-2", onNode("n3")),
		newPod("done", onNode("n1"), inPhase(corev1.PodSucceeded)), // inactive: not counted
	}, pods...)
	before := clonePods(pods)

	got := names(ok(t)(replicaset.RankForDeletion(pods, related, t0)))
	// Rank (co-located pods) outranks ready time: colocated (3) before
	// ready-old (2) before ready-new (1).
	want := []string{"pending", "not-ready", "colocated", "ready-old", "ready-new"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RankForDeletion mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, pods); diff != "" {
		t.Errorf("RankForDeletion modified its input (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff([]int{2, 1, 1, 2, 3}, okInts(t)(replicaset.CoLocationRanks(pods, related))); diff != "" {
		t.Errorf("CoLocationRanks mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, 0, 0, 0, 0}, okInts(t)(replicaset.CoLocationRanks(pods, nil))); diff != "" {
		t.Errorf("CoLocationRanks(nil related) mismatch (-want +got):\n%s", diff)
	}
}

func TestPodsToDelete(t *testing.T) {
	pods := []*corev1.Pod{
		newPod("ready", onNode("n1"), readySince(t0.Add(-time.Hour))),
		newPod("unready", onNode("n1")),
		newPod("unscheduled"),
	}
	cases := []struct {
		n    int
		want []string
	}{
		{n: -1, want: []string{}},
		{n: 0, want: []string{}},
		{n: 1, want: []string{"unscheduled"}},
		{n: 2, want: []string{"unscheduled", "unready"}},
		{n: 3, want: []string{"ready", "unready", "unscheduled"}}, // all: input order, unranked
		{n: 7, want: []string{"ready", "unready", "unscheduled"}},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.n), func(t *testing.T) {
			got := names(ok(t)(replicaset.PodsToDelete(pods, nil, tc.n, t0)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodsToDelete(n=%d) mismatch (-want +got):\n%s", tc.n, diff)
			}
		})
	}
}

// TestRankAgreesWithReference sorts random pods with RankForDeletion and
// with sort.Sort over the straightforward reference comparison; the orders
// must be identical, ties and all.
func TestRankAgreesWithReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		pods := make([]*corev1.Pod, 1+r.IntN(40))
		for i := range pods {
			pods[i] = randomPod(r, i)
		}
		related := pods[:r.IntN(len(pods)+1)]
		now := t0
		if iter%10 == 0 {
			now = time.Time{}
		}
		got := names(ok(t)(replicaset.RankForDeletion(pods, related, now)))
		ref := refSorter{pods: clonePtrs(pods), ranks: okInts(t)(replicaset.CoLocationRanks(pods, related)), now: now}
		sort.Sort(ref)
		if diff := cmp.Diff(names(ref.pods), got); diff != "" {
			t.Fatalf("iteration %d: RankForDeletion disagrees with reference (-ref +got):\n%s", iter, diff)
		}
	}
}

func randomPod(r *rand.Rand, i int) *corev1.Pod {
	pick := func(n int) int { return r.IntN(n) }
	times := []time.Time{{}, t0.Add(-time.Second), t0.Add(-90 * time.Second), t0.Add(-100 * time.Second), t0.Add(-time.Hour), t0.Add(time.Minute)}
	opts := []podOpt{
		onNode([]string{"", "n1", "n2"}[pick(3)]),
		inPhase([]corev1.PodPhase{"", corev1.PodPending, corev1.PodUnknown, corev1.PodRunning, corev1.PodFailed}[pick(5)]),
		createdAt(times[pick(len(times))]),
		withUID(strconv.Itoa(pick(1000))),
	}
	if pick(2) == 0 {
		opts = append(opts, readySince(times[pick(len(times))]))
	}
	if c := []string{"", "-1", "0", "1", "+1", "01", "x"}[pick(7)]; c != "" {
		opts = append(opts, withCost(c))
	}
	if pick(3) == 0 {
		opts = append(opts, withRestarts(int32(pick(3))))
	}
	if pick(3) == 0 {
		opts = append(opts, withSidecarRestarts(int32(pick(3))))
	}
	return newPod(fmt.Sprintf("p%02d", i), opts...)
}

// refSorter is the reference: it reads every field from the pods on each
// comparison, rule by rule.
type refSorter struct {
	pods  []*corev1.Pod
	ranks []int
	now   time.Time
}

func (s refSorter) Len() int { return len(s.pods) }
func (s refSorter) Swap(i, j int) {
	s.pods[i], s.pods[j] = s.pods[j], s.pods[i]
	s.ranks[i], s.ranks[j] = s.ranks[j], s.ranks[i]
}
func (s refSorter) Less(i, j int) bool {
	return naiveLess(s.pods[i], s.pods[j], s.ranks[i], s.ranks[j], s.now)
}

func naiveLess(a, b *corev1.Pod, ra, rb int, now time.Time) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	ord := map[corev1.PodPhase]int{corev1.PodUnknown: 1, corev1.PodRunning: 2}
	if ord[a.Status.Phase] != ord[b.Status.Phase] {
		return ord[a.Status.Phase] < ord[b.Status.Phase]
	}
	ar, br := replicaset.IsPodReady(a), replicaset.IsPodReady(b)
	if ar != br {
		return !ar
	}
	if ca, cb := refCost(a), refCost(b); ca != cb {
		return ca < cb
	}
	if ra != rb {
		return ra > rb
	}
	bucketLess := func(ta, tb time.Time) bool {
		if now.IsZero() || ta.IsZero() || tb.IsZero() {
			if ta.IsZero() || tb.IsZero() {
				return ta.IsZero()
			}
			return ta.After(tb)
		}
		lg := func(t time.Time) int64 {
			if d := now.Sub(t); d > 0 {
				return int64(math.Log2(float64(d)))
			}
			return -1
		}
		if lg(ta) == lg(tb) {
			return a.UID < b.UID
		}
		return lg(ta) < lg(tb)
	}
	if ar && br {
		ta, tb := refReadyTime(a), refReadyTime(b)
		if !ta.Equal(tb) {
			return bucketLess(ta, tb)
		}
	}
	rA, sA := refRestarts(a)
	rB, sB := refRestarts(b)
	if rA != rB {
		return rA > rB
	}
	if sA != sB {
		return sA > sB
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return bucketLess(a.CreationTimestamp.Time, b.CreationTimestamp.Time)
	}
	return false
}

func refCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[replicaset.PodDeletionCostAnnotation]
	if !ok || v == "" || v[0] == '+' || (v[0] == '0' && v != "0") {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

func refReadyTime(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func refRestarts(p *corev1.Pod) (regular, sidecar int) {
	for _, c := range p.Status.ContainerStatuses {
		regular = max(regular, int(c.RestartCount))
	}
	side := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			side[c.Name] = true
		}
	}
	for _, c := range p.Status.InitContainerStatuses {
		if side[c.Name] {
			sidecar = max(sidecar, int(c.RestartCount))
		}
	}
	return regular, sidecar
}

func clonePods(pods []*corev1.Pod) []*corev1.Pod {
	if pods == nil {
		return nil
	}
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.DeepCopy()
	}
	return out
}

func clonePtrs(pods []*corev1.Pod) []*corev1.Pod { return append([]*corev1.Pod(nil), pods...) }

// ok returns a function that returns its pods, failing the test on an
// error: ok(t)(replicaset.PodsToDelete(...)).
func ok(tb testing.TB) func([]*corev1.Pod, error) []*corev1.Pod {
	return func(pods []*corev1.Pod, err error) []*corev1.Pod {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return pods
	}
}

// okInts is ok for ranks.
func okInts(tb testing.TB) func([]int, error) []int {
	return func(v []int, err error) []int {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}
