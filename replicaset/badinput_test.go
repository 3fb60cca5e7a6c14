package replicaset_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// ReplicaSets the API server rejects, for ManageReplicas.
func noSelector(rs *appsv1.ReplicaSet)    { rs.Spec.Selector = nil }
func emptySelector(rs *appsv1.ReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} }
func badSelector(rs *appsv1.ReplicaSet) {
	rs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
}
func noTemplateLabels(rs *appsv1.ReplicaSet) { rs.Spec.Template.Labels = nil }
func otherTemplateLabels(rs *appsv1.ReplicaSet) {
	rs.Spec.Template.Labels = map[string]string{"app": "other"}
}

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
	full := replicaset.EventRules{ReplicaSets: rsReader{w}}
	w.addRS(rs)
	rules := func(es []reconcile.Enqueue, obs []replicaset.Observation) string { return fmt.Sprint(es, obs) }

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
		{"ManageReplicas(nil selector)", func() (any, error) {
			return nil, errOf(replicaset.ManageReplicas(replicaset.Input{ReplicaSet: newRS("nosel", 1, noSelector), ExpectationsSatisfied: true}, t0))
		}, "replicaset: ManageReplicas: ReplicaSet default/nosel: spec.selector is nil; the API server requires one"},
		{"ManageReplicas(empty selector)", func() (any, error) {
			return nil, errOf(replicaset.ManageReplicas(replicaset.Input{ReplicaSet: newRS("emptysel", 1, emptySelector), ExpectationsSatisfied: true}, t0))
		}, "replicaset: ManageReplicas: ReplicaSet default/emptysel: spec.selector is empty; the API server rejects it"},
		{"ManageReplicas(invalid selector)", func() (any, error) {
			return nil, errOf(replicaset.ManageReplicas(replicaset.Input{ReplicaSet: newRS("badsel", 1, badSelector), ExpectationsSatisfied: true}, t0))
		}, "replicaset: ManageReplicas: ReplicaSet default/badsel: spec.selector is invalid: "},
		{"ManageReplicas(no template labels)", func() (any, error) {
			_, err := replicaset.ManageReplicas(replicaset.Input{ReplicaSet: newRS("nolabels", 1, noTemplateLabels), ExpectationsSatisfied: true}, t0)
			if !errors.Is(err, replicaset.ErrNoLabels) {
				return nil, fmt.Errorf("error %v does not wrap ErrNoLabels", err)
			}
			return nil, err
		}, "replicaset: ManageReplicas: ReplicaSet default/nolabels: spec.template.metadata.labels is empty: unable to create pods, no labels"},
		{"ManageReplicas(no template labels, nothing to create)", func() (any, error) {
			return nil, errOf(replicaset.ManageReplicas(replicaset.Input{ReplicaSet: newRS("nolabels", 0, noTemplateLabels), ExpectationsSatisfied: true}, t0))
		}, "replicaset: ManageReplicas: ReplicaSet default/nolabels: spec.template.metadata.labels is empty"},
		{"ManageReplicas(selector does not match the template)", func() (any, error) {
			return nil, errOf(replicaset.ManageReplicas(replicaset.Input{ReplicaSet: newRS("mismatch", 1, otherTemplateLabels), ExpectationsSatisfied: true}, t0))
		}, `replicaset: ManageReplicas: ReplicaSet default/mismatch: spec.selector "app=mismatch" does not match spec.template.metadata.labels "app=other"; the API server rejects it`},
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
		{"WritePods(nil writer)", func() (any, error) { return nil, errOf(replicaset.WritePods(ctx, nil, nil, rs, replicaset.Plan{})) },
			"replicaset: WritePods: the PodWriter is nil"},
		{"WritePods(nil rs)", func() (any, error) { return nil, errOf(replicaset.WritePods(ctx, w, nil, nil, replicaset.Plan{})) },
			"replicaset: WritePods: the ReplicaSet is nil"},
		{"WritePods(nil pod to delete)", func() (any, error) {
			return nil, errOf(replicaset.WritePods(ctx, w, nil, rs, replicaset.Plan{Actions: []replicaset.Action{replicaset.DeletePods{Pods: withNil}}}))
		}, "replicaset: WritePods: DeletePods.Pods[1] is nil"},
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
		{"Plan.String(nil action)", func() (any, error) {
			return replicaset.Plan{Actions: []replicaset.Action{nil, replicaset.CreatePods{Count: 2}}}.String(), nil
		}, "<nil action>\ncreate 2 pods\n"},
		{"Pending.String(nil)", func() (any, error) { return (*replicaset.Pending)(nil).String(), nil }, "expect nothing"},
		{"DeletePods.String(nil pod)", func() (any, error) { return replicaset.DeletePods{Pods: withNil}.String(), nil }, "delete 2 pods a, <nil>"},
		{"SlowStartBatches(-1, 1)", func() (any, error) { return replicaset.SlowStartBatches(-1, 1), nil }, "[]"},
		{"Expectations.Record(nil)", func() (any, error) {
			var e replicaset.Expectations
			e.Record(key("web"), nil, t0)
			return e.Satisfied(key("web"), t0), nil
		}, "true"},

		// A nil *Expectations reads as empty and ignores writes.
		{"nil Expectations: writes ignored, satisfied", func() (any, error) {
			var e *replicaset.Expectations
			e.Record(key("web"), &replicaset.Pending{Creations: 2}, t0)
			e.Set(key("web"), 1, 1, t0)
			e.ExpectCreations(key("web"), 3, t0)
			e.ExpectDeletions(key("web"), []types.UID{"a"}, t0)
			e.CreationObserved(key("web"))
			e.DeletionObserved(key("web"), "a")
			e.Lower(key("web"), 1, 1)
			e.Raise(key("web"), 1, 1)
			e.Observe(replicaset.Observation{ReplicaSet: key("web"), Kind: replicaset.PodCreated},
				replicaset.Observation{ReplicaSet: key("web"), Kind: replicaset.PodDeleted, Pod: "a"},
				replicaset.Observation{ReplicaSet: key("web"), Kind: replicaset.ReplicaSetGone})
			e.Delete(key("web"))
			return e.Satisfied(key("web"), t0), nil
		}, "true"},
		{"nil Expectations: Get", func() (any, error) {
			x, ok := (*replicaset.Expectations)(nil).Get(key("web"))
			return fmt.Sprint(x == replicaset.Expectation{}, ok), nil
		}, "true false"},
		{"nil Expectations: PendingDeletions", func() (any, error) {
			return (*replicaset.Expectations)(nil).PendingDeletions(key("web")) == nil, nil
		}, "true"},

		// Event rules: a nil object asks for nothing; without a cache, a pod
		// event resolves to no ReplicaSet.
		{"EventRules.ReplicaSetAdded(nil)", func() (any, error) { return rules(full.ReplicaSetAdded(ctx, nil)), nil }, "[] []"},
		{"EventRules.ReplicaSetUpdated(nil, rs)", func() (any, error) { return rules(full.ReplicaSetUpdated(ctx, nil, rs)), nil }, "[] []"},
		{"EventRules.ReplicaSetUpdated(rs, nil)", func() (any, error) { return rules(full.ReplicaSetUpdated(ctx, rs, nil)), nil }, "[] []"},
		{"EventRules.ReplicaSetDeleted(nil)", func() (any, error) { return rules(full.ReplicaSetDeleted(ctx, nil)), nil }, "[] []"},
		{"EventRules.PodAdded(nil)", func() (any, error) { return rules(full.PodAdded(ctx, nil)), nil }, "[] []"},
		{"EventRules.PodUpdated(nil, pod)", func() (any, error) { return rules(full.PodUpdated(ctx, nil, pod)), nil }, "[] []"},
		{"EventRules.PodUpdated(pod, nil)", func() (any, error) { return rules(full.PodUpdated(ctx, pod, nil)), nil }, "[] []"},
		{"EventRules.PodDeleted(nil)", func() (any, error) { return rules(full.PodDeleted(ctx, nil)), nil }, "[] []"},
		{"EventRules.PodDeleted(pod), the cached owner", func() (any, error) { return rules(full.PodDeleted(ctx, pod)), nil },
			"[sync default/web (batch)] [default/web: pod uid-a deleted]"},
		{"zero EventRules.ReplicaSetAdded(rs)", func() (any, error) { return rules(replicaset.EventRules{}.ReplicaSetAdded(ctx, rs)), nil },
			"[sync default/web] []"},
		{"zero EventRules.ReplicaSetDeleted(rs)", func() (any, error) { return rules(replicaset.EventRules{}.ReplicaSetDeleted(ctx, rs)), nil },
			"[sync default/web] [default/web: gone]"},
		{"zero EventRules.PodAdded(owned pod)", func() (any, error) { return rules(replicaset.EventRules{}.PodAdded(ctx, pod)), nil }, "[] []"},
		{"zero EventRules.PodAdded(orphan)", func() (any, error) {
			return rules(replicaset.EventRules{}.PodAdded(ctx, newPod("o", withLabels(map[string]string{"app": "web"})))), nil
		}, "[] []"},
		{"zero EventRules.PodUpdated(owned pod)", func() (any, error) {
			cur := pod.DeepCopy()
			cur.ResourceVersion = "2"
			return rules(replicaset.EventRules{}.PodUpdated(ctx, pod, cur)), nil
		}, "[] []"},
		{"zero EventRules.PodDeleted(owned pod)", func() (any, error) { return rules(replicaset.EventRules{}.PodDeleted(ctx, pod)), nil }, "[] []"},
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
