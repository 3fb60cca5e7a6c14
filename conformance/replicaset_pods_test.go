package conformance

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	corehelper "k8s.io/kubernetes/pkg/apis/core/helper"
	"k8s.io/kubernetes/pkg/controller"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// Differential tests of replicaset's pod predicates and deletion ranking
// against pkg/controller and pkg/api/v1/pod.

// podsIn is an RS, its pods and the related pods (the pods of sibling
// ReplicaSets of the same Deployment), at a given now.
type podsIn struct {
	rs      *appsv1.ReplicaSet
	pods    []*corev1.Pod
	related []*corev1.Pod
	n       int
	now     time.Time
}

func genPodsIn(r *rand.Rand) podsIn {
	d := genDeployment(r, genDeploymentOpts{valid: true})
	rs := genReplicaSet(r, d, 0, genRSOpts{sane: true})
	o := genPodOpts{nodes: 1 + r.IntN(6)}
	pods := genPods(r, rs, r.IntN(30), o)
	if len(pods) > 1 && chance(r, 0.3) {
		// Clones differing in one attribute reach the later tie-breaks.
		for i := 1; i < len(pods); i++ {
			p := pods[0].DeepCopy()
			p.Name, p.UID = pods[i].Name, pods[i].UID
			tweakPod(r, p)
			pods[i] = p
		}
	}
	related := append([]*corev1.Pod(nil), pods...)
	sibling := genReplicaSet(r, d, 1, genRSOpts{sane: true})
	for i, p := range genPods(r, sibling, r.IntN(10), o) {
		p.Name, p.UID = fmt.Sprintf("sib-%d", i), "sib-uid-"+p.UID
		related = append(related, p)
	}
	now := genNow
	if chance(r, 0.1) {
		now = time.Time{}
	}
	return podsIn{rs: rs, pods: pods, related: related, n: r.IntN(len(pods) + 2), now: now}
}

// tweakPod changes one attribute the deletion order looks at.
func tweakPod(r *rand.Rand, p *corev1.Pod) {
	switch r.IntN(8) {
	case 0:
		p.Spec.NodeName = pick(r, "", "node-1", "node-2")
	case 1:
		p.Status.Phase = pick(r, corev1.PodPending, corev1.PodRunning, corev1.PodUnknown)
	case 2:
		for i := range p.Status.Conditions {
			p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(genNow.Add(-time.Duration(r.IntN(1<<uint(r.IntN(22)))) * time.Second))
		}
	case 3:
		p.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": pick(r, "0", "1", "-1", "05", "x")}
	case 4:
		if len(p.Status.ContainerStatuses) > 0 {
			p.Status.ContainerStatuses[0].RestartCount = int32(r.IntN(4))
		}
	case 5:
		for i := range p.Status.InitContainerStatuses {
			p.Status.InitContainerStatuses[i].RestartCount = int32(r.IntN(4))
		}
	case 6:
		p.CreationTimestamp = metav1.NewTime(genNow.Add(-time.Duration(r.IntN(1<<uint(r.IntN(20)))) * time.Second))
	}
}

func describePodsIn(in podsIn) string {
	return fmt.Sprintf("  now=%v n=%d\n  pods:\n%s  related:\n%s", in.now, in.n, describePods(in.pods), describePods(in.related))
}

// upstreamRanks is pkg/controller/replicaset getPodsRankedByRelatedPodsOnSameNode,
// which is unexported: the rank of a pod is the number of active related
// pods on its node name ("" included).
func upstreamRanks(pods, related []*corev1.Pod) []int {
	onNode := map[string]int{}
	for _, p := range related {
		if controller.IsPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranks := make([]int, len(pods))
	for i, p := range pods {
		ranks[i] = onNode[p.Spec.NodeName]
	}
	return ranks
}

// upstreamPodsToDelete is upstream getPodsToDelete (unexported) built from
// the exported ActivePodsWithRanks; it sorts a copy.
func upstreamPodsToDelete(pods, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	pods = append([]*corev1.Pod(nil), pods...)
	if n < len(pods) {
		sort.Sort(controller.ActivePodsWithRanks{Pods: pods, Rank: upstreamRanks(pods, related), Now: metav1.NewTime(now)})
	}
	return pods[:n]
}

func podNames(pods []*corev1.Pod) string {
	s := make([]string, len(pods))
	for i, p := range pods {
		s[i] = p.Name
	}
	return "[" + strings.Join(s, " ") + "]"
}

func TestPodDeletionRanking(t *testing.T) {
	differential(t, 4, genPodsIn, describePodsIn, func(in podsIn) verdict {
		active := controller.FilterActivePods(discard, in.pods)
		if u, o := fmt.Sprint(upstreamRanks(active, in.related)), fmt.Sprint(must(replicaset.CoLocationRanks(active, in.related))); u != o {
			return disagree("ranks: upstream %s; ours %s", u, o)
		}
		sorted := append([]*corev1.Pod(nil), active...)
		sort.Sort(controller.ActivePodsWithRanks{Pods: sorted, Rank: upstreamRanks(sorted, in.related), Now: metav1.NewTime(in.now)})
		if u, o := podNames(sorted), podNames(must(replicaset.RankForDeletion(active, in.related, in.now))); u != o {
			return disagree("ranking: upstream %s; ours %s", u, o)
		}
		n := min(in.n, len(active))
		if u, o := podNames(upstreamPodsToDelete(active, in.related, n, in.now)), podNames(must(replicaset.PodsToDelete(active, in.related, n, in.now))); u != o {
			return disagree("PodsToDelete(n=%d): upstream %s; ours %s", n, u, o)
		}
		return agree()
	})
}

type pairIn struct {
	a, b         *corev1.Pod
	rankA, rankB int
	now          time.Time
}

func TestLessForDeletion(t *testing.T) {
	differential(t, 1,
		func(r *rand.Rand) pairIn {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "rs-uid"}}
			o := genPodOpts{nodes: 3}
			a := genPod(r, rs, 0, o)
			b := genPod(r, rs, 1, o)
			if chance(r, 0.6) {
				b = a.DeepCopy()
				b.Name, b.UID = "rs-p1", pick(r, types.UID("pod-uid-0001"), "pod-uid-0000", "a")
				for range 1 + r.IntN(2) {
					tweakPod(r, b)
				}
			}
			ra, rb := r.IntN(3), r.IntN(3)
			now := genNow
			if chance(r, 0.15) {
				now = time.Time{}
			}
			return pairIn{a, b, ra, rb, now}
		},
		func(in pairIn) string {
			return fmt.Sprintf("  now=%v ranks=(%d,%d)\n%s", in.now, in.rankA, in.rankB, describePods([]*corev1.Pod{in.a, in.b}))
		},
		func(in pairIn) verdict {
			s := controller.ActivePodsWithRanks{Pods: []*corev1.Pod{in.a, in.b}, Rank: []int{in.rankA, in.rankB}, Now: metav1.NewTime(in.now)}
			u1, u2 := s.Less(0, 1), s.Less(1, 0)
			o1 := replicaset.LessForDeletion(in.a, in.b, in.rankA, in.rankB, in.now)
			o2 := replicaset.LessForDeletion(in.b, in.a, in.rankB, in.rankA, in.now)
			if u1 != o1 || u2 != o2 {
				return disagree("Less(a,b), Less(b,a): upstream (%v, %v); ours (%v, %v)", u1, u2, o1, o2)
			}
			return agree()
		})
}

func TestPodPredicates(t *testing.T) {
	type in struct {
		pod      *corev1.Pod
		minReady int32
		now      time.Time
	}
	differential(t, 1,
		func(r *rand.Rand) in {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "rs-uid"}}
			p := genPod(r, rs, 0, genPodOpts{nodes: 2})
			if chance(r, 0.1) {
				// Several Ready conditions: the first one counts.
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
			}
			minReady := pick(r, int32(0), 1, 10, 3600, 1<<20)
			// now near the ready transition, to hit the inclusive boundary.
			now := genNow.Add(time.Duration(r.IntN(5)-2) * time.Second)
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && chance(r, 0.3) {
					now = c.LastTransitionTime.Add(time.Duration(minReady)*time.Second + time.Duration(r.IntN(3)-1)*time.Nanosecond)
				}
			}
			return in{p, minReady, now}
		},
		func(i in) string {
			return fmt.Sprintf("  minReady=%d now=%v\n%s  conditions=%+v\n", i.minReady, i.now, describePods([]*corev1.Pod{i.pod}), i.pod.Status.Conditions)
		},
		func(i in) verdict {
			p := i.pod
			if u, o := controller.IsPodActive(p), replicaset.IsPodActive(p); u != o {
				return disagree("IsPodActive: upstream %v; ours %v", u, o)
			}
			if u, o := controller.IsPodTerminating(p), replicaset.IsPodTerminating(p); u != o {
				return disagree("IsPodTerminating: upstream %v; ours %v", u, o)
			}
			if u, o := podutil.IsPodReady(p), replicaset.IsPodReady(p); u != o {
				return disagree("IsPodReady: upstream %v; ours %v", u, o)
			}
			if u, o := podutil.IsPodAvailable(p, i.minReady, metav1.NewTime(i.now)), replicaset.IsPodAvailable(p, i.minReady, i.now); u != o {
				return disagree("IsPodAvailable: upstream %v; ours %v", u, o)
			}
			uc, _ := corehelper.GetDeletionCostFromPodAnnotations(p.Annotations)
			if o := replicaset.DeletionCost(p); uc != o {
				return disagree("deletion cost: upstream %d; ours %d", uc, o)
			}
			ua := controller.FilterActivePods(discard, []*corev1.Pod{p})
			if (len(ua) == 1) != replicaset.IsPodActive(p) {
				return disagree("FilterActivePods kept %d; ours IsPodActive %v", len(ua), replicaset.IsPodActive(p))
			}
			return agree()
		})
}
