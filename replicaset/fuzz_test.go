package replicaset_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// fuzzInput builds a ReplicaSet and its pods from a seed and a few
// parameters: random pods (phases, readiness, nodes, costs, restarts),
// some owned by the ReplicaSet, some orphans, some another's, some with
// other labels, some terminating.
func fuzzInput(seed uint64, replicas int32, npods uint8, flags uint8) (*appsv1.ReplicaSet, []*corev1.Pod) {
	r := rand.New(rand.NewPCG(seed, uint64(flags)))
	rs := newRS("web", replicas%40, func(rs *appsv1.ReplicaSet) {
		rs.Generation = int64(1 + r.IntN(3))
		rs.Spec.MinReadySeconds = int32(r.IntN(3)) * 30
		rs.Spec.Template.Labels = map[string]string{"app": "web", "tier": "fe"}
		if flags&1 != 0 {
			rs.Spec.Replicas = nil // the API default, 1
		}
		if flags&2 != 0 {
			t := metav1.NewTime(t0)
			rs.DeletionTimestamp = &t
		}
	})
	other := newRS("other", 1)
	pods := make([]*corev1.Pod, int(npods)%60)
	for i := range pods {
		p := randomPod(r, i)
		p.UID = types.UID(fmt.Sprintf("%s-%d", p.UID, i)) // random order, but unique, as the API server's
		switch r.IntN(5) {
		case 0, 1, 2:
			ownedBy(rs)(p)
		case 3:
			ownedBy(other)(p)
		}
		switch r.IntN(6) {
		case 0:
			p.Labels = map[string]string{"app": "db"}
		case 1:
			p.Labels = map[string]string{"app": "web", "tier": "fe"}
		}
		if r.IntN(8) == 0 {
			deletingAt(t0.Add(-time.Minute))(p)
		}
		pods[i] = p
	}
	return rs, pods
}

// FuzzManageReplicas claims random pods and decides a sync: nothing
// panics or modifies its input, and the plan creates or deletes exactly
// what the spec asks for, within the burst, deleting only active pods it
// owns, with a status that counts them.
func FuzzManageReplicas(f *testing.F) {
	f.Add(uint64(1), int32(3), uint8(5), uint8(0), uint8(0), true)
	f.Add(uint64(2), int32(0), uint8(30), uint8(0), uint8(4), true)
	f.Add(uint64(3), int32(10), uint8(2), uint8(1), uint8(2), false)
	f.Add(uint64(4), int32(5), uint8(12), uint8(2), uint8(0), true)
	f.Fuzz(func(t *testing.T, seed uint64, replicas int32, npods, flags, burst uint8, satisfied bool) {
		rs, pods := fuzzInput(seed, replicas, npods, flags)
		rsBefore, podsBefore := rs.DeepCopy(), clonePods(pods)
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		claims, err := replicaset.ClaimPods(rs, sel, pods)
		if err != nil {
			t.Fatal(err)
		}
		var active, terminating []*corev1.Pod
		for _, c := range claims {
			if c.Verdict == replicaset.Own || c.Verdict == replicaset.Adopt {
				active = append(active, c.Pod)
			}
			if c.Verdict != replicaset.Own && metav1.IsControlledBy(c.Pod, rs) && c.Verdict != replicaset.Release {
				t.Fatalf("pod %s: verdict %s for an owned pod", c.Pod.Name, c.Verdict)
			}
		}
		for _, p := range pods {
			if replicaset.IsPodTerminating(p) && replicaset.IsClaimed(rs, sel, p) {
				terminating = append(terminating, p)
			}
		}
		in := replicaset.Input{ReplicaSet: rs, Active: active, Terminating: terminating, Related: pods,
			ExpectationsSatisfied: satisfied, BurstReplicas: int(burst % 8)}
		plan, err := replicaset.ManageReplicas(in, t0)
		if rs.Spec.Replicas != nil && *rs.Spec.Replicas < 0 {
			if err == nil {
				t.Fatalf("negative spec.replicas %d: no error", *rs.Spec.Replicas)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = plan.String()
		if diff := cmp.Diff(rsBefore, rs); diff != "" {
			t.Fatalf("the ReplicaSet was modified (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(podsBefore, pods); diff != "" {
			t.Fatalf("the pods were modified (-before +after):\n%s", diff)
		}
		checkPlan(t, in, plan)
	})
}

// checkPlan checks a plan against the rules of ManageReplicas.
func checkPlan(t *testing.T, in replicaset.Input, plan replicaset.Plan) {
	t.Helper()
	rs := in.ReplicaSet
	want := 1
	if rs.Spec.Replicas != nil {
		want = int(*rs.Spec.Replicas)
	}
	burst := in.BurstReplicas
	if burst == 0 {
		burst = replicaset.BurstReplicas
	}
	diff := len(in.Active) - want
	act := in.ExpectationsSatisfied && rs.DeletionTimestamp == nil && diff != 0
	if !act {
		if len(plan.Actions) != 0 || plan.Pending != nil {
			t.Fatalf("diff %d, satisfied %v, deleting %v: plan %s", diff, in.ExpectationsSatisfied, rs.DeletionTimestamp != nil, plan)
		}
	} else if len(plan.Actions) != 1 || plan.Pending == nil {
		t.Fatalf("diff %d: plan %s; want one action and an expectation", diff, plan)
	}
	for _, a := range plan.Actions {
		switch a := a.(type) {
		case replicaset.CreatePods:
			if diff >= 0 || a.Count != min(-diff, burst) || plan.Pending.Creations != a.Count {
				t.Fatalf("diff %d, burst %d: %s, %s", diff, burst, a, plan.Pending)
			}
		case replicaset.DeletePods:
			if diff <= 0 || len(a.Pods) != min(diff, burst) || len(plan.Pending.Deletions) != len(a.Pods) {
				t.Fatalf("diff %d, burst %d: %s, %s", diff, burst, a, plan.Pending)
			}
			seen := map[types.UID]bool{}
			for i, p := range a.Pods {
				if seen[p.UID] || !contains(in.Active, p) || plan.Pending.Deletions[i] != p.UID {
					t.Fatalf("deletes %s: a duplicate, not an active pod of the ReplicaSet, or not expected", p.Name)
				}
				seen[p.UID] = true
			}
		default:
			t.Fatalf("unexpected action %s", a)
		}
	}
	if st := plan.Status; st != nil {
		if int(st.Replicas) != len(in.Active) || st.ReadyReplicas > st.Replicas || st.AvailableReplicas > st.ReadyReplicas ||
			st.FullyLabeledReplicas > st.Replicas || st.ObservedGeneration != rs.Generation ||
			st.TerminatingReplicas == nil || int(*st.TerminatingReplicas) != len(in.Terminating) {
			t.Fatalf("status %+v for %d active and %d terminating pods at generation %d", *st, len(in.Active), len(in.Terminating), rs.Generation)
		}
	}
	if plan.RequeueAfter < 0 {
		t.Fatalf("RequeueAfter = %v", plan.RequeueAfter)
	}
}

func contains(pods []*corev1.Pod, p *corev1.Pod) bool {
	for _, q := range pods {
		if q == p {
			return true
		}
	}
	return false
}
