package replicaset_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// Every exported function either returns an error naming the bad argument
// (nil ReplicaSet, nil selector, nil entry in a pod list) or gives its
// documented answer for nil; none panics.
func TestBadInput(t *testing.T) {
	rs := newRS("web", 2)
	pod := newPod("a", ownedBy(rs))
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	withNil := []*corev1.Pod{pod, nil}
	errOf := func(_ any, err error) error { return err }
	ctx := context.Background()
	w := newWorld(t0)

	type call struct {
		name string
		call func() (any, error) // any: the answer for nil, compared as %v
		want string              // the answer, or the error text expected
	}
	calls := []call{
		// Decisions: an error.
		{"ManageReplicas(nil rs)", func() (any, error) { return nil, errOf(replicaset.ManageReplicas(replicaset.Input{}, t0)) },
			"replicaset: ManageReplicas: the ReplicaSet is nil"},
		{"ManageReplicas(negative replicas)", func() (any, error) {
			return nil, errOf(replicaset.ManageReplicas(replicaset.Input{ReplicaSet: newRS("neg", -1)}, t0))
		}, "replicaset: ManageReplicas: spec.replicas is negative (-1)"},
		{"ManageReplicas(nil active pod)", func() (any, error) {
			return nil, errOf(replicaset.ManageReplicas(replicaset.Input{ReplicaSet: rs, Active: withNil}, t0))
		}, "replicaset: ManageReplicas: Input.Active[1] is nil"},
		{"ManageReplicas(nil terminating pod)", func() (any, error) {
			return nil, errOf(replicaset.ManageReplicas(replicaset.Input{ReplicaSet: rs, Terminating: withNil}, t0))
		}, "replicaset: ManageReplicas: Input.Terminating[1] is nil"},
		{"ManageReplicas(nil related pod)", func() (any, error) {
			return nil, errOf(replicaset.ManageReplicas(replicaset.Input{ReplicaSet: rs, Related: withNil}, t0))
		}, "replicaset: ManageReplicas: Input.Related[1] is nil"},
		{"CalculateStatus(nil rs)", func() (any, error) { return nil, errOf(replicaset.CalculateStatus(nil, nil, nil, nil, t0)) },
			"replicaset: CalculateStatus: the ReplicaSet is nil"},
		{"CalculateStatus(nil active pod)", func() (any, error) { return nil, errOf(replicaset.CalculateStatus(rs, withNil, nil, nil, t0)) },
			"replicaset: CalculateStatus: active[1] is nil"},
		{"CalculateStatus(nil terminating pod)", func() (any, error) { return nil, errOf(replicaset.CalculateStatus(rs, nil, withNil, nil, t0)) },
			"replicaset: CalculateStatus: terminating[1] is nil"},
		{"ClaimPods(nil rs)", func() (any, error) { return nil, errOf(replicaset.ClaimPods(nil, sel, nil)) },
			"replicaset: ClaimPods: the ReplicaSet is nil"},
		{"ClaimPods(nil selector)", func() (any, error) { return nil, errOf(replicaset.ClaimPods(rs, nil, nil)) },
			"replicaset: ClaimPods: the selector is nil"},
		{"ClaimPods(nil pod)", func() (any, error) { return nil, errOf(replicaset.ClaimPods(rs, sel, withNil)) },
			"replicaset: ClaimPods: pods[1] is nil"},
		{"PodsToDelete(nil pod)", func() (any, error) { return nil, errOf(replicaset.PodsToDelete(withNil, nil, 1, t0)) },
			"replicaset: PodsToDelete: pods[1] is nil"},
		{"PodsToDelete(nil related)", func() (any, error) { return nil, errOf(replicaset.PodsToDelete(nil, withNil, 1, t0)) },
			"replicaset: PodsToDelete: related[1] is nil"},
		{"RankForDeletion(nil pod)", func() (any, error) { return nil, errOf(replicaset.RankForDeletion(withNil, nil, t0)) },
			"replicaset: RankForDeletion: pods[1] is nil"},
		{"RankForDeletion(nil related)", func() (any, error) { return nil, errOf(replicaset.RankForDeletion(nil, withNil, t0)) },
			"replicaset: RankForDeletion: related[1] is nil"},
		{"CoLocationRanks(nil pod)", func() (any, error) { return nil, errOf(replicaset.CoLocationRanks(withNil, []*corev1.Pod{pod})) },
			"replicaset: CoLocationRanks: pods[1] is nil"},
		{"CoLocationRanks(nil related)", func() (any, error) { return nil, errOf(replicaset.CoLocationRanks(nil, withNil)) },
			"replicaset: CoLocationRanks: related[1] is nil"},
		{"AdoptPatch(nil rs)", func() (any, error) { return nil, errOf(replicaset.AdoptPatch(nil, pod)) },
			"replicaset: AdoptPatch: the ReplicaSet is nil"},
		{"AdoptPatch(nil pod)", func() (any, error) { return nil, errOf(replicaset.AdoptPatch(rs, nil)) },
			"replicaset: AdoptPatch: the pod is nil"},
		{"ReleasePatch(nil rs)", func() (any, error) { return nil, errOf(replicaset.ReleasePatch(nil, pod)) },
			"replicaset: ReleasePatch: the ReplicaSet is nil"},
		{"ReleasePatch(nil pod)", func() (any, error) { return nil, errOf(replicaset.ReleasePatch(rs, nil)) },
			"replicaset: ReleasePatch: the pod is nil"},
		{"NewPod(nil)", func() (any, error) { return nil, errOf(replicaset.NewPod(nil)) },
			"replicaset: NewPod: the ReplicaSet is nil"},
		{"Apply(nil writer)", func() (any, error) { return nil, errOf(replicaset.Apply(ctx, nil, nil, rs, replicaset.Plan{})) },
			"replicaset: Apply: the PodWriter is nil"},
		{"Apply(nil rs)", func() (any, error) { return nil, errOf(replicaset.Apply(ctx, w, nil, nil, replicaset.Plan{})) },
			"replicaset: Apply: the ReplicaSet is nil"},
		{"Apply(nil pod to delete)", func() (any, error) {
			return nil, errOf(replicaset.Apply(ctx, w, nil, rs, replicaset.Plan{Actions: []replicaset.Action{replicaset.DeletePods{Pods: withNil}}}))
		}, "replicaset: Apply: DeletePods.Pods[1] is nil"},
		{"NewPodCache(nil)", func() (any, error) { return nil, errOf(replicaset.NewPodCache(nil)) },
			"replicaset: NewPodCache: the cache is nil"},

		// Predicates and helpers: the documented answer.
		{"IsPodActive(nil)", func() (any, error) { return replicaset.IsPodActive(nil), nil }, "false"},
		{"IsPodTerminating(nil)", func() (any, error) { return replicaset.IsPodTerminating(nil), nil }, "false"},
		{"IsPodReady(nil)", func() (any, error) { return replicaset.IsPodReady(nil), nil }, "false"},
		{"IsPodAvailable(nil)", func() (any, error) { return replicaset.IsPodAvailable(nil, 0, t0), nil }, "false"},
		{"DeletionCost(nil)", func() (any, error) { return replicaset.DeletionCost(nil), nil }, "0"},
		{"IsOwnedOrOrphan(nil rs)", func() (any, error) { return replicaset.IsOwnedOrOrphan(nil, pod), nil }, "false"},
		{"IsOwnedOrOrphan(nil pod)", func() (any, error) { return replicaset.IsOwnedOrOrphan(rs, nil), nil }, "false"},
		{"IsClaimed(nil rs)", func() (any, error) { return replicaset.IsClaimed(nil, sel, pod), nil }, "false"},
		{"IsClaimed(nil selector)", func() (any, error) { return replicaset.IsClaimed(rs, nil, pod), nil }, "false"},
		{"IsClaimed(nil pod)", func() (any, error) { return replicaset.IsClaimed(rs, sel, nil), nil }, "false"},
		{"ClaimVerdict(nil rs)", func() (any, error) { return replicaset.ClaimVerdict(nil, sel, pod), nil }, "ignore"},
		{"ClaimVerdict(nil selector)", func() (any, error) { return replicaset.ClaimVerdict(rs, nil, pod), nil }, "ignore"},
		{"ClaimVerdict(nil pod)", func() (any, error) { return replicaset.ClaimVerdict(rs, sel, nil), nil }, "ignore"},
		{"NewControllerRef(nil)", func() (any, error) { return replicaset.NewControllerRef(nil) == nil, nil }, "true"},
		{"NeedsStatusUpdate(nil rs)", func() (any, error) {
			return replicaset.NeedsStatusUpdate(nil, &appsv1.ReplicaSetStatus{}), nil
		}, "false"},
		{"NeedsStatusUpdate(nil status)", func() (any, error) { return replicaset.NeedsStatusUpdate(rs, nil), nil }, "false"},
		{"StatusToWrite(nil rs)", func() (any, error) {
			_, ok := replicaset.StatusToWrite(nil, appsv1.ReplicaSetStatus{})
			return ok, nil
		}, "false"},
		{"AvailabilityRequeue(nil rs)", func() (any, error) {
			return replicaset.AvailabilityRequeue(nil, &appsv1.ReplicaSetStatus{}, nil, t0, t0), nil
		}, "0s"},
		{"AvailabilityRequeue(nil status)", func() (any, error) { return replicaset.AvailabilityRequeue(rs, nil, nil, t0, t0), nil }, "0s"},
		{"AvailabilityRequeue(nil pod)", func() (any, error) {
			slow := newRS("slow", 2, func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = 10 })
			return replicaset.AvailabilityRequeue(slow, &appsv1.ReplicaSetStatus{ReadyReplicas: 1}, withNil, t0, t0), nil
		}, "10s"},
		{"NextAvailabilityCheck(nil pod)", func() (any, error) {
			d, ok := replicaset.NextAvailabilityCheck([]*corev1.Pod{nil}, 10, t0, t0)
			return fmt.Sprint(d, ok), nil
		}, "0s false"},
		{"PodReplicaSets(nil pod)", func() (any, error) { return len(replicaset.PodReplicaSets(nil, []*appsv1.ReplicaSet{rs})), nil }, "0"},
		{"PodReplicaSets(nil rs)", func() (any, error) {
			return len(replicaset.PodReplicaSets(pod, []*appsv1.ReplicaSet{nil, rs})), nil
		}, "1"},
		{"LessForDeletion(nil, pod)", func() (any, error) { return replicaset.LessForDeletion(nil, pod, 0, 0, t0), nil }, "true"},
		{"LessForDeletion(pod, nil)", func() (any, error) { return replicaset.LessForDeletion(pod, nil, 0, 0, t0), nil }, "false"},
		{"LessForDeletion(nil, nil)", func() (any, error) { return replicaset.LessForDeletion(nil, nil, 0, 0, t0), nil }, "false"},
		{"DeletePods.String(nil pod)", func() (any, error) { return replicaset.DeletePods{Pods: withNil}.String(), nil }, "delete 2 pods a, <nil>"},
		{"SlowStartBatches(-1, 1)", func() (any, error) { return replicaset.SlowStartBatches(-1, 1), nil }, "[]"},
		{"Expectations.Record(nil)", func() (any, error) {
			var e replicaset.Expectations
			e.Record(key("web"), nil, t0)
			return e.Satisfied(key("web"), t0), nil
		}, "true"},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panicked: %v", r)
				}
			}()
			got, err := c.call()
			if err != nil {
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("error = %q; want %q", err, c.want)
				}
				return
			}
			if s := fmt.Sprint(got); s != c.want {
				t.Errorf("= %s; want %s", s, c.want)
			}
		})
	}
}
