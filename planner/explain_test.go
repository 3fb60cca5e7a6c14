package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/planner"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// stuck is a rolling Deployment of 10 (25%/25%: surge 3, min available 8)
// part-way from web:1 to web:2: the old ReplicaSet at 8 (all available),
// the new one at 5 with no pod available, progressing since 2m48s ago.
type stuck struct {
	d        *appsv1.Deployment
	old, new *appsv1.ReplicaSet
}

func newStuck(t *testing.T) stuck {
	t.Helper()
	d := web(10, "web:2", pct("25%"), pct("25%"))
	d.UID, d.Generation = "d-uid", 1
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Conditions: []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: rollout.ReasonReplicaSetUpdated,
		LastUpdateTime: metav1.NewTime(t0.Add(-2*time.Minute - 48*time.Second))}}}
	mk := func(image string, rev string, uid types.UID, spec, avail int32, created time.Time) *appsv1.ReplicaSet {
		rs := previous(t, d, image)[0]
		rs.UID, rs.CreationTimestamp = uid, metav1.NewTime(created)
		rs.Annotations[rollout.RevisionAnnotation] = rev
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
		rs.Spec.Replicas = ptr(spec)
		rs.Status = appsv1.ReplicaSetStatus{Replicas: spec, ReadyReplicas: avail, AvailableReplicas: avail}
		return rs
	}
	return stuck{d: d,
		old: mk("web:1", "1", "old-uid", 8, 8, t0.Add(-time.Hour)),
		new: mk("web:2", "2", "new-uid", 5, 0, t0.Add(-3*time.Minute))}
}

func (s stuck) rss() []*appsv1.ReplicaSet { return []*appsv1.ReplicaSet{s.old, s.new} }

// pod returns a pod of rs named name, scheduled and running unless edit
// says otherwise.
func pod(rs *appsv1.ReplicaSet, name string, edit func(p *corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: corev1.PodSpec{NodeName: "node-0"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}},
	}
	if edit != nil {
		edit(p)
	}
	return p
}

func waiting(reason string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
	}
}

func unscheduled(p *corev1.Pod) {
	p.Spec.NodeName = ""
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
}

func TestExplainMinAvailable(t *testing.T) {
	s := newStuck(t)
	pods := []*corev1.Pod{
		pod(s.new, "n1", waiting("CrashLoopBackOff")), pod(s.new, "n2", waiting("CrashLoopBackOff")),
		pod(s.new, "n3", waiting("CrashLoopBackOff")), pod(s.new, "n4", unscheduled), pod(s.new, "n5", unscheduled),
	}
	got := planner.Explain(s.d, s.rss(), pods, t0)
	base := planner.Blocker{Replicas: 10, Total: 13, MaxSurge: 3, MaxUnavailable: 2, MinAvailable: 8}
	surge := base
	surge.Code, surge.ReplicaSet = planner.SurgeLimit, s.new.Name
	surge.Message = "new replica set " + s.new.Name + " cannot scale up: 13 pods ≥ 10 + 3 surge"
	minAvail := base
	minAvail.Code, minAvail.Available, minAvail.NewUnavailable = planner.MinAvailableLimit, 8, 5
	minAvail.Pods = planner.PodCauses{CrashLooping: 3, Unscheduled: 2}
	minAvail.Message = "old replica sets cannot scale down: 8 available ≤ 8 minimum because 5 new pods are unavailable (3 crash-looping, 2 unscheduled)"
	want := []planner.Blocker{surge, minAvail, {Code: planner.DeadlinePending, Reason: rollout.ReasonReplicaSetUpdated,
		Remaining: 7*time.Minute + 12*time.Second, Message: "progress deadline in 7m12s"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Explain mismatch (-want +got):\n%s", diff)
	}
}

// TestExplainCodes covers one stuck state per blocker code; only codes and
// messages are compared (the numbers are covered above), with the
// ReplicaSet names replaced by OLD and NEW.
func TestExplainCodes(t *testing.T) {
	type edit func(s *stuck) []*corev1.Pod
	withCond := func(rs *appsv1.ReplicaSet) {
		rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			Reason: "FailedCreate", Message: `pods "web-x" is forbidden: exceeded quota: compute`}}
	}
	tests := []struct {
		name string
		edit edit
		want []string
	}{
		{"complete", func(s *stuck) []*corev1.Pod {
			s.old.Spec.Replicas, s.old.Status = ptr[int32](0), appsv1.ReplicaSetStatus{}
			s.new.Spec.Replicas = ptr[int32](10)
			s.new.Status = appsv1.ReplicaSetStatus{Replicas: 10, ReadyReplicas: 10, AvailableReplicas: 10}
			return nil
		}, nil},
		{"selecting all", func(s *stuck) []*corev1.Pod { s.d.Spec.Selector = &metav1.LabelSelector{}; return nil },
			[]string{"SelectingAll: selector is empty and would select every pod; the controller ignores this deployment"}},
		{"rollback", func(s *stuck) []*corev1.Pod {
			s.d.Annotations = map[string]string{rollout.RollbackToAnnotation: "1"}
			return nil
		}, []string{"RollbackPending: rollback to revision 1 is pending"}},
		{"being deleted", func(s *stuck) []*corev1.Pod {
			s.d.DeletionTimestamp, s.d.Finalizers = &metav1.Time{Time: t0.Add(-4 * time.Minute)}, []string{"example.com/hold"}
			s.d.Spec.Paused = true // the deletion comes first, as in the controller
			return nil
		}, []string{"BeingDeleted: deployment is being deleted (since 4m0s): the controller only updates its status"}},
		{"being deleted, complete", func(s *stuck) []*corev1.Pod {
			s.d.DeletionTimestamp = &metav1.Time{Time: t0}
			s.old.Spec.Replicas, s.old.Status = ptr[int32](0), appsv1.ReplicaSetStatus{}
			s.new.Spec.Replicas = ptr[int32](10)
			s.new.Status = appsv1.ReplicaSetStatus{Replicas: 10, ReadyReplicas: 10, AvailableReplicas: 10}
			return nil
		}, nil},
		{"paused", func(s *stuck) []*corev1.Pod { s.d.Spec.Paused = true; return nil },
			[]string{"Paused: deployment is paused"}},
		{"invalid", func(s *stuck) []*corev1.Pod { s.d.Spec.Strategy.RollingUpdate.MaxSurge = nil; return nil },
			[]string{"InvalidSpec: rollout: maxSurge: nil value for IntOrString (the API server's default, 25%, is set by defaults.Deployment)", "DeadlinePending: progress deadline in 7m12s"}},
		{"quota and generation", func(s *stuck) []*corev1.Pod {
			s.d.Generation = 2
			withCond(s.new)
			s.new.Status.Replicas = 3
			s.d.Status.Conditions = nil
			return []*corev1.Pod{pod(s.new, "n1", nil), pod(s.new, "n2", nil), pod(s.new, "n3", waiting("ImagePullBackOff"))}
		}, []string{
			"GenerationNotObserved: controller has not observed generation 2 yet (observed 1)",
			`ReplicaFailure: ReplicaFailure on NEW: FailedCreate: pods "web-x" is forbidden: exceeded quota: compute`,
			"SurgeLimit: new replica set NEW cannot scale up: 13 pods ≥ 10 + 3 surge",
			"MinAvailableLimit: old replica sets cannot scale down: 8 available ≤ 8 minimum because 5 new pods are unavailable (1 failing to pull the image, 2 not ready yet, 2 not created)",
		}},
		{"create failed", func(s *stuck) []*corev1.Pod {
			s.new = nil
			s.d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: rollout.ReasonFailedRSCreate, Message: "Failed to create new replica set: quota"}}
			return nil
		}, []string{"NewReplicaSetMissing: Failed to create new replica set: quota"}},
		{"new pods unavailable", func(s *stuck) []*corev1.Pod {
			s.old.Spec.Replicas, s.old.Status = ptr[int32](0), appsv1.ReplicaSetStatus{}
			s.new.Spec.Replicas, s.new.Spec.MinReadySeconds = ptr[int32](10), 30
			s.new.Status = appsv1.ReplicaSetStatus{Replicas: 10, ReadyReplicas: 9, AvailableReplicas: 8}
			var pods []*corev1.Pod
			for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
				pods = append(pods, pod(s.new, n, func(p *corev1.Pod) {
					p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue,
						LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))}
				}))
			}
			return append(pods, pod(s.new, "i", func(p *corev1.Pod) {
				p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue,
					LastTransitionTime: metav1.NewTime(t0.Add(-5 * time.Second))}
			}), pod(s.new, "j", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }))
		}, []string{
			"NewPodsUnavailable: new replica set NEW has 8 of 10 pods available (1 waiting for minReadySeconds, 1 terminating, 1 not created)",
			"DeadlinePending: progress deadline in 7m12s",
		}},
		{"controller pending", func(s *stuck) []*corev1.Pod {
			s.new.Status.AvailableReplicas = 5
			return nil
		}, []string{
			"ControllerPending: controller will scale rs/OLD 8→3",
			"DeadlinePending: progress deadline in 7m12s",
		}},
		{"deadline exceeded", func(s *stuck) []*corev1.Pod {
			s.d.Status.Conditions[0].Status, s.d.Status.Conditions[0].Reason = corev1.ConditionFalse, rollout.ReasonProgressDeadlineExceeded
			s.d.Status.Conditions[0].LastUpdateTime = metav1.NewTime(t0.Add(-2 * time.Minute))
			return []*corev1.Pod{pod(s.new, "a", nil), pod(s.new, "b", nil), pod(s.new, "c", nil), pod(s.new, "d", nil), pod(s.new, "e", nil)}
		}, []string{
			"SurgeLimit: new replica set NEW cannot scale up: 13 pods ≥ 10 + 3 surge",
			"MinAvailableLimit: old replica sets cannot scale down: 8 available ≤ 8 minimum because 5 new pods are unavailable (5 not ready yet)",
			"DeadlineExceeded: progress deadline exceeded 2m0s ago",
		}},
		{"recreate waits", func(s *stuck) []*corev1.Pod {
			s.d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			s.old.Spec.Replicas, s.old.Status = ptr[int32](0), appsv1.ReplicaSetStatus{}
			s.new = nil
			s.d.Status.Conditions = nil
			return []*corev1.Pod{
				pod(s.old, "o1", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }),
				pod(s.old, "o2", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }),
				pod(s.old, "o3", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			}
		}, []string{"OldPodsRunning: recreate waits for 2 old pods to stop (2 terminating)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStuck(t)
			pods := tt.edit(&s)
			var rss []*appsv1.ReplicaSet
			for _, rs := range []*appsv1.ReplicaSet{s.old, s.new} {
				if rs != nil {
					rss = append(rss, rs)
				}
			}
			var got []string
			for _, b := range planner.Explain(s.d, rss, pods, t0) {
				msg := strings.ReplaceAll(b.Message, s.old.Name, "OLD")
				if s.new != nil {
					msg = strings.ReplaceAll(msg, s.new.Name, "NEW")
				}
				got = append(got, string(b.Code)+": "+msg)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Explain mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
