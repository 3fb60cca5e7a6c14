package plugin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// mf is a managedFields entry written at now − at.
func mf(manager string, op metav1.ManagedFieldsOperationType, sub string, at time.Duration, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, APIVersion: "apps/v1",
		Time: ptr(ago(at)), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

const (
	fieldsReplicas = `{"f:spec":{"f:replicas":{}}}`
	fieldsTemplate = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{}}}}}`
	fieldsStatus   = `{"f:status":{"f:observedGeneration":{}}}`
)

// scaled is a ScalingReplicaSet event of the deployment controller,
// count times between first and last ago.
func scaled(rs string, up bool, from, to, count int32, first, last time.Duration) *corev1.Event {
	dir := "down"
	if up {
		dir = "up"
	}
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web.%s%d%d", dir, from, to), Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: "web", Namespace: "shop", UID: "d-uid"},
		Type:           corev1.EventTypeNormal, Reason: "ScalingReplicaSet",
		Message: fmt.Sprintf("Scaled %s replica set %s from %d to %d", dir, rs, from, to),
		Count:   count, FirstTimestamp: ago(first), LastTimestamp: ago(last),
		Source: corev1.EventSource{Component: "deployment-controller"}}
}

// whyText runs Why and renders it, checking what every report must
// hold: a fix for every blocking cause and a "To unblock" section when
// stuck or being deleted.
func whyText(t *testing.T, st *State) (WhyReport, string) {
	t.Helper()
	r := Why(st, now, Thresholds{})
	var b strings.Builder
	if err := Write(&b, Text, r); err != nil {
		t.Fatal(err)
	}
	checkUnblock(t, r, b.String())
	return r, b.String()
}

func checkUnblock(t *testing.T, r WhyReport, text string) {
	t.Helper()
	for _, c := range r.Causes {
		if c.Severity == Blocking && c.Fix == "" {
			t.Errorf("blocking cause %s has no fix:\n%s", c.Code, text)
		}
	}
	if (r.State == Stuck || r.State == Deleting) && (len(r.Unblock) == 0 || !strings.Contains(text, "\nTo unblock:\n")) {
		t.Errorf("%s report without a To unblock section:\n%s", r.State, text)
	}
}

func wantReport(t *testing.T, r WhyReport, text string, state RolloutState, codes []CauseCode, texts ...string) {
	t.Helper()
	if r.State != state {
		t.Errorf("state = %s; want %s\n%s", r.State, state, text)
	}
	if diff := cmp.Diff(codes, codesOf(r.Causes)); diff != "" {
		t.Errorf("causes mismatch (-want +got):\n%s\n%s", diff, text)
	}
	for _, s := range texts {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}
}

func codesOf(cs []Cause) []CauseCode { return codes(cs) }

// unobserved is web complete at nginx:2, then changed to nginx:3 4m ago
// by kubectl set image while no controller runs: generation 3, observed 2.
func unobserved(changed time.Duration) (*world, *State) {
	w := complete()
	w.d.Generation = 3
	w.d.Spec.Template.Spec.Containers[0].Image = "nginx:3"
	w.d.ManagedFields = []metav1.ManagedFieldsEntry{
		mf("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "", time.Hour, fieldsReplicas),
		mf("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status", 10*time.Minute, fieldsStatus),
		mf("kubectl-set", metav1.ManagedFieldsOperationUpdate, "", changed, fieldsTemplate),
	}
	return w, w.state()
}

func TestWhyControllerNotObserving(t *testing.T) {
	renewed := metav1.NewMicroTime(now.Add(-4 * time.Minute))
	acquired := metav1.NewMicroTime(now.Add(-3 * time.Hour))
	leases := []LeaseRead{
		{Namespace: "kube-system", Name: "kube-controller-manager", Lease: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr("cp-1_3f2a"), LeaseDurationSeconds: ptr(int32(15)), RenewTime: &renewed, AcquireTime: &acquired}}},
		{Namespace: "kube-system", Name: "ctrlkit-controller", Err: `leases.coordination.k8s.io "ctrlkit-controller" not found in namespace "kube-system"`},
	}
	t.Run("for 4 minutes, leader gone", func(t *testing.T) {
		_, st := unobserved(4 * time.Minute)
		st.Leases = leases
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{ControllerNotObserving},
			"no Deployment controller has acted on generation 3 for 4m0s (status.observedGeneration is 2)",
			`the status was last written by "kube-controller-manager" 10m0s ago`,
			"lease kube-system/kube-controller-manager: held by cp-1_3f2a since 3h0m0s ago, last renewed 4m0s ago: its 15s lease expired 3m45s ago",
			`lease kube-system/ctrlkit-controller: leases.coordination.k8s.io "ctrlkit-controller" not found`,
			"kubectl -n kube-system get lease kube-controller-manager ctrlkit-controller -o wide",
			"GenerationNotObserved: controller has not observed generation 3 yet (observed 2)")
		if r.ExitCode() != ExitStuck || r.Estimate != nil {
			t.Errorf("exit %d, estimate %+v; want 1 and none", r.ExitCode(), r.Estimate)
		}
	})
	t.Run("leader alive", func(t *testing.T) {
		_, st := unobserved(4 * time.Minute)
		fresh := metav1.NewMicroTime(now.Add(-2 * time.Second))
		st.Leases = []LeaseRead{{Namespace: "kube-system", Name: "kube-controller-manager", Lease: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr("cp-1_3f2a"), LeaseDurationSeconds: ptr(int32(15)), RenewTime: &fresh}}}}
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{ControllerNotObserving}, "renewed 2s ago (15s lease): that leader is alive, yet does not act on this Deployment")
	})
	t.Run("released lease", func(t *testing.T) {
		_, st := unobserved(4 * time.Minute)
		st.Leases = []LeaseRead{{Namespace: "team", Name: "ctrlkit-controller", Lease: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr(""), LeaseDurationSeconds: ptr(int32(15)), RenewTime: &renewed}}}}
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{ControllerNotObserving}, "lease team/ctrlkit-controller: no holder (released): no instance is leading, last renewed 4m0s ago",
			"kubectl -n team get lease ctrlkit-controller -o wide")
	})
	t.Run("the new ReplicaSet refused", func(t *testing.T) {
		// The controller acts but cannot finish: a new ReplicaSet the
		// API server refuses leaves observedGeneration behind.
		w, st := unobserved(4 * time.Minute)
		name := collisionNames(w.d)[0]
		w.d.Status.Conditions[0] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ReplicaSetCreateError",
			Message: fmt.Sprintf("Failed to create new replica set %q: replicasets.apps %q is forbidden: exceeded quota: rs", name, name)}
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{QuotaExceeded}, "GenerationNotObserved")
		// One for an older template does not count.
		w.d.Status.Conditions[0].Message = `Failed to create new replica set "web-0ld": replicasets.apps "web-0ld" is forbidden: exceeded quota: rs`
		r, text = whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{ControllerNotObserving, QuotaExceeded})
	})
	t.Run("under the threshold", func(t *testing.T) {
		_, st := unobserved(10 * time.Second)
		r, text := whyText(t, st)
		wantReport(t, r, text, Progressing, nil, "GenerationNotObserved")
	})
	t.Run("no managed fields: the deployment's age", func(t *testing.T) {
		w, st := unobserved(time.Minute)
		w.d.ManagedFields = nil
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{ControllerNotObserving}, "for up to 1h0m", "no controller has ever written the status")
	})
	t.Run("plan does not predict a completion", func(t *testing.T) {
		_, st := unobserved(4 * time.Minute)
		p, err := PlanLive(st, WhatIf{}, now, PlanOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := Write(&b, Text, p); err != nil {
			t.Fatal(err)
		}
		if p.Complete || p.ExitCode() != ExitStuck || p.Unobserved != Duration(4*time.Minute) || len(p.Warnings) != 1 ||
			!strings.Contains(b.String(), "predicted: does NOT complete as things stand: no controller has acted on the deployment for 4m0s; once one does, complete after") ||
			!strings.Contains(b.String(), "warning: no Deployment controller has acted on generation 3 for 4m0s") {
			t.Errorf("plan: complete %t, exit %d, unobserved %s, warnings %q\n%s", p.Complete, p.ExitCode(), p.Unobserved, p.Warnings, b.String())
		}
	})
}

func TestWhyBeingDeleted(t *testing.T) {
	deleting := func(finalizers ...string) *world {
		w := complete()
		w.d.DeletionTimestamp, w.d.Finalizers = ptr(ago(4*time.Minute)), finalizers
		return w
	}
	t.Run("held by a finalizer", func(t *testing.T) {
		r, text := whyText(t, deleting("example.com/hold").state())
		wantReport(t, r, text, Deleting, []CauseCode{BeingDeleted},
			"deployment/web in shop: BEING DELETED",
			"the deployment is being deleted (for 4m0s): the controller no longer rolls it out or scales it",
			"held by finalizers example.com/hold",
			"background deletion: once the deployment is gone the garbage collector deletes its 2 ReplicaSets and their 3 pods",
			`kubectl patch deployment/web --type=json -p '[{"op":"remove","path":"/metadata/finalizers/0"}]'`)
		if r.ExitCode() != ExitStuck {
			t.Errorf("exit %d; want 1", r.ExitCode())
		}
	})
	t.Run("image changed after the deletion", func(t *testing.T) {
		w := deleting("example.com/hold")
		w.d.Generation = 3
		w.d.Spec.Template.Spec.Containers[0].Image = "nginx:3"
		st := w.state()
		w.d.Status.ObservedGeneration = 3 // the status-only sync observes it
		r, text := whyText(t, st)
		wantReport(t, r, text, Deleting, []CauseCode{BeingDeleted},
			"BeingDeleted: deployment is being deleted (since 4m0s): the controller only updates its status")
		if strings.Contains(text, "ControllerPending") || strings.Contains(text, "roll back") {
			t.Errorf("a deployment being deleted is not pending a rollout:\n%s", text)
		}
	})
	t.Run("foreground", func(t *testing.T) {
		r, text := whyText(t, deleting(metav1.FinalizerDeleteDependents).state())
		wantReport(t, r, text, Deleting, []CauseCode{BeingDeleted},
			"foreground deletion: the garbage collector deletes its 2 ReplicaSets and their 3 pods first, then the deployment",
			"the garbage collector (kube-controller-manager) removes this finalizer")
	})
	t.Run("orphan", func(t *testing.T) {
		r, text := whyText(t, deleting(metav1.FinalizerOrphanDependents).state())
		wantReport(t, r, text, Deleting, []CauseCode{BeingDeleted},
			"orphan deletion: the garbage collector removes the deployment's ownership of its 2 ReplicaSets and their 3 pods, which keep running")
	})
}

// fight is web complete at 3 replicas while an HPA (6) and Argo CD (3)
// take turns on spec.replicas.
func fightWorld() (*world, *State) {
	w := complete()
	w.d.Generation, w.d.Status.ObservedGeneration = 17, 17
	w.d.CreationTimestamp = ago(45 * time.Second)
	w.d.Annotations["argocd.argoproj.io/tracking-id"] = "web:apps/Deployment:shop/web"
	w.d.ManagedFields = []metav1.ManagedFieldsEntry{
		mf("argocd-application-controller", metav1.ManagedFieldsOperationUpdate, "", time.Second, fieldsReplicas),
		mf("e2e.test", metav1.ManagedFieldsOperationUpdate, "status", time.Second, fieldsStatus),
	}
	st := w.state()
	st.Events = []*corev1.Event{
		scaled(w.new.Name, true, 3, 6, 6, 40*time.Second, 3*time.Second),
		scaled(w.new.Name, false, 6, 3, 6, 38*time.Second, time.Second),
	}
	st.Autoscalers = []*autoscalingv2.HorizontalPodAutoscaler{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr(int32(2)), MaxReplicas: 6,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, DesiredReplicas: 6}}}
	return w, st
}

func TestWhySpecFight(t *testing.T) {
	t.Run("HPA against Argo CD", func(t *testing.T) {
		w, st := fightWorld()
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{SpecFight},
			fmt.Sprintf("spec.replicas keeps changing: %s scaled 3→6 ×6 and 6→3 ×6 within 39s, the last 1s ago (generation 17, 45s old; "+
				"it counts as over after 35s without a flip): two writers disagree: ", w.new.Name),
			"HorizontalPodAutoscaler web (replicas 2–6, wants 6)",
			"argocd-application-controller (Argo CD, GitOps), owns it now (replicas: 3), wrote 1s ago",
			"managedFields: argocd-application-controller (Update) owns spec.replicas, wrote 1s ago",
			"let the HorizontalPodAutoscaler alone own spec.replicas")
	})
	t.Run("the HPA's /scale writes recorded", func(t *testing.T) {
		w, st := fightWorld()
		w.d.ManagedFields = append(w.d.ManagedFields, mf("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "scale", 3*time.Second, fieldsReplicas))
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{SpecFight}, "wants 6), writing /scale as kube-controller-manager, owns it now (replicas: 3), wrote 3s ago; argocd-application-controller")
		if strings.Count(text, "kube-controller-manager") != 2 { // the party and its managedFields line
			t.Errorf("the HPA's writer is named once as a party:\n%s", text)
		}
	})
	t.Run("second controller, template flipping", func(t *testing.T) {
		w, st := fightWorld()
		st.Autoscalers = nil
		delete(w.d.Annotations, "argocd.argoproj.io/tracking-id")
		w.d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "WebApp", Name: "web", UID: "wa", Controller: ptr(true)}}
		w.d.ManagedFields = []metav1.ManagedFieldsEntry{
			mf("webapp-operator", metav1.ManagedFieldsOperationUpdate, "", 2*time.Second, fieldsTemplate),
			mf("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", 4*time.Second, `{"f:spec":{"f:strategy":{}}}`),
		}
		st.Events = []*corev1.Event{
			scaled(w.new.Name, true, 0, 3, 3, 50*time.Second, 5*time.Second), scaled(w.new.Name, false, 3, 0, 3, 45*time.Second, 2*time.Second),
			scaled(w.old.Name, true, 0, 3, 3, 48*time.Second, 3*time.Second), scaled(w.old.Name, false, 3, 0, 2, 47*time.Second, 6*time.Second),
		}
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{SpecFight}, "the pod template (spec.template) keeps changing",
			"webapp-operator (a second controller: the deployment is controlled by webapp/web), wrote 2s ago; kubectl-edit (kubectl edit), wrote 4s ago",
			"make one writer own the field")
	})
	t.Run("a rollback is not a fight", func(t *testing.T) {
		w, st := fightWorld()
		st.Autoscalers = nil
		st.Events = []*corev1.Event{ // up, then down: the spans do not interleave
			scaled(w.new.Name, true, 0, 1, 1, 40*time.Second, 40*time.Second), scaled(w.new.Name, true, 1, 2, 2, 38*time.Second, 30*time.Second),
			scaled(w.new.Name, false, 2, 1, 2, 20*time.Second, 12*time.Second), scaled(w.new.Name, false, 1, 0, 1, 10*time.Second, 10*time.Second),
		}
		r, text := whyText(t, st)
		wantReport(t, r, text, Complete, nil)
	})
	t.Run("old flapping is not a fight now", func(t *testing.T) {
		w, st := fightWorld()
		st.Events = []*corev1.Event{scaled(w.new.Name, true, 3, 6, 6, time.Hour, 30*time.Minute), scaled(w.new.Name, false, 6, 3, 6, time.Hour, 29*time.Minute)}
		st.Autoscalers = nil
		r, text := whyText(t, st)
		wantReport(t, r, text, Complete, nil)
	})
	t.Run("an HPA beside Argo CD, no flapping", func(t *testing.T) {
		_, st := fightWorld()
		st.Events = nil // Argo CD may ignore spec.replicas: nothing says they disagree
		r, text := whyText(t, st)
		wantReport(t, r, text, Complete, nil)
	})
	t.Run("an HPA beside a manifest that sets replicas", func(t *testing.T) {
		w, st := fightWorld()
		st.Events = nil
		delete(w.d.Annotations, "argocd.argoproj.io/tracking-id")
		w.d.Annotations[corev1.LastAppliedConfigAnnotation] = `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3}}`
		r, text := whyText(t, st)
		wantReport(t, r, text, Complete, []CauseCode{SpecFight},
			"~ SpecFight: HorizontalPodAutoscaler web manages spec.replicas, and the manifest applied by kubectl apply sets it too (replicas: 3 in kubectl's last-applied-configuration)")
	})
}

// rejected makes a pod Failed the way the kubelet rejects it.
func rejected(reason, msg string, created time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.CreationTimestamp = ago(created)
		p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: msg}
	}
}

func TestWhyKubeletRejected(t *testing.T) {
	const msg = "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"
	build := func() *world {
		w := newWorld(4, 3, 1, "app:2")
		for i := range 3 {
			w.pod(w.old, i, readyFor(time.Hour))
		}
		for i := range 5 {
			w.pod(w.new, i, rejected("OutOfcpu", "Pod was rejected: "+msg, time.Duration(5-i)*time.Second))
		}
		return w
	}
	t.Run("OutOfcpu, a hot loop", func(t *testing.T) {
		r, text := whyText(t, build().state())
		wantReport(t, r, text, Stuck, []CauseCode{KubeletRejected},
			"5 pods rejected by the kubelet (OutOfcpu), created within 4s: the ReplicaSet controller replaces each rejected pod, and the kubelet rejects the replacement too",
			"Pod was rejected: "+msg+" (node node-1)",
			"the node lacks cpu for the pod's requests", "kubectl delete pods --field-selector=status.phase=Failed",
			"or roll back to the previous revision")
	})
	t.Run("the message from the kubelet's event", func(t *testing.T) {
		w := newWorld(4, 3, 1, "app:2")
		for i := range 3 {
			w.pod(w.old, i, readyFor(time.Hour))
		}
		p := w.pod(w.new, 0, rejected("NodeAffinity", "", time.Second))
		st := w.state()
		st.Events = []*corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: p.Name}, Type: corev1.EventTypeWarning,
			Reason: "NodeAffinity", Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector", Source: corev1.EventSource{Component: "kubelet"}}}
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{KubeletRejected}, "1 pod rejected by the kubelet (NodeAffinity)",
			"Predicate NodeAffinity failed", "fix the template's nodeName, nodeSelector")
	})
	t.Run("evicted pods are not rejections", func(t *testing.T) {
		w := complete()
		w.pod(w.new, 9, rejected("Evicted", "The node was low on resource: memory.", time.Minute))
		r, text := whyText(t, w.state())
		wantReport(t, r, text, Complete, nil)
	})
	t.Run("left over after the rollout completed", func(t *testing.T) {
		w := complete()
		w.pod(w.new, 9, rejected("UnexpectedAdmissionError", "Pod was rejected: Allocate failed due to no healthy devices present", time.Minute))
		r, text := whyText(t, w.state())
		wantReport(t, r, text, Complete, []CauseCode{KubeletRejected}, "(left over: the rollout completed)")
	})
}

func TestWhyAutoscaler(t *testing.T) {
	hpa := func(conds ...autoscalingv2.HorizontalPodAutoscalerCondition) *autoscalingv2.HorizontalPodAutoscaler {
		util := int32(50)
		cur := int32(180)
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &util}}}}},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, DesiredReplicas: 3, Conditions: conds,
				CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
					Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &cur}}}}}}
	}
	t.Run("at its max", func(t *testing.T) {
		st := complete().state()
		st.Autoscalers = []*autoscalingv2.HorizontalPodAutoscaler{hpa(autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingLimited,
			Status: corev1.ConditionTrue, Reason: "TooManyReplicas", Message: "the desired replica count is more than the maximum replica count"})}
		r, text := whyText(t, st)
		wantReport(t, r, text, Complete, []CauseCode{AutoscalerLimited},
			"~ AutoscalerLimited: HorizontalPodAutoscaler web is at its maximum of 3 replicas and wants more: cpu 180% of requests (target 50%)",
			"TooManyReplicas: the desired replica count is more than the maximum replica count")
	})
	t.Run("cannot scale", func(t *testing.T) {
		st := complete().state()
		st.Autoscalers = []*autoscalingv2.HorizontalPodAutoscaler{hpa(autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive,
			Status: corev1.ConditionFalse, Reason: "FailedGetResourceMetric", Message: "unable to get metrics for resource cpu"})}
		r, text := whyText(t, st)
		wantReport(t, r, text, Complete, []CauseCode{AutoscalerFailing}, "HorizontalPodAutoscaler web cannot scale (ScalingActive=False)")
	})
}

func TestWhyCreateFailures(t *testing.T) {
	failing := func(msg string) *State {
		w := newWorld(4, 3, 2, "app:2")
		for i := range 3 {
			w.pod(w.old, i, readyFor(time.Hour))
		}
		w.new.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: msg}}
		return w.state()
	}
	t.Run("webhook down", func(t *testing.T) {
		r, text := whyText(t, failing(`Internal error occurred: failed calling webhook "pods.example.com": failed to call webhook: Post "https://127.0.0.1:1/validate?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused`))
		wantReport(t, r, text, Stuck, []CauseCode{FailedCreate}, "an admission webhook cannot be called, and its failurePolicy Fail rejects the pods",
			"set failurePolicy: Ignore", "rolling back does not help")
	})
	t.Run("missing ServiceAccount", func(t *testing.T) {
		st := failing(`pods "web-abc-" is forbidden: error looking up service account shop/app: serviceaccount "app" not found`)
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{AdmissionRejected}, "name ServiceAccount app, which does not exist",
			"kubectl create serviceaccount app -n shop", "or roll back")
	})
	t.Run("webhook denies", func(t *testing.T) {
		r, text := whyText(t, failing(`admission webhook "pods.example.com" denied the request: images from docker.io are not allowed`))
		wantReport(t, r, text, Stuck, []CauseCode{AdmissionRejected}, "admission rejects the pods")
	})
	t.Run("other", func(t *testing.T) {
		r, text := whyText(t, failing(`Timeout: request did not complete within requested timeout`))
		wantReport(t, r, text, Stuck, []CauseCode{FailedCreate}, "the ReplicaSet controller retries the creations on its own (or roll back")
	})
	t.Run("ReplicaSet count quota", func(t *testing.T) {
		w := newWorld(3, 3, 0, "app:2")
		for i := range 3 {
			w.pod(w.old, i, readyFor(time.Hour))
		}
		st := w.state()
		st.ReplicaSets = []*appsv1.ReplicaSet{w.old}
		w.d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ReplicaSetCreateError",
			Message: `Failed to create new replica set "web-x": replicasets.apps "web-x" is forbidden: exceeded quota: rs, requested: count/replicasets.apps=1, used: count/replicasets.apps=1, limited: count/replicasets.apps=1`}}
		r, text := whyText(t, st)
		wantReport(t, r, text, Stuck, []CauseCode{QuotaExceeded}, "a ResourceQuota on the number of ReplicaSets (count/replicasets.apps) rejects the new ReplicaSet",
			"lower spec.revisionHistoryLimit (now 10)")
	})
}

func TestWhyImagePullSecretMissing(t *testing.T) {
	w := newWorld(4, 3, 2, "registry.example.com/app:2")
	for i := range 3 {
		w.pod(w.old, i, readyFor(time.Hour))
	}
	var st *State
	var pods []*corev1.Pod
	for i := range 2 {
		pods = append(pods, w.pod(w.new, i, waiting("ImagePullBackOff", `Back-off pulling image "registry.example.com/app:2": ErrImagePull: pull access denied, repository does not exist or may require authorization`)))
	}
	st = w.state()
	for _, p := range pods {
		st.Events = append(st.Events, &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: p.Name}, Type: corev1.EventTypeWarning,
			Reason: "FailedToRetrieveImagePullSecret", Message: "Unable to retrieve some image pull secrets (regcred); attempting to pull the image may not succeed."})
	}
	r, text := whyText(t, st)
	wantReport(t, r, text, Stuck, []CauseCode{ImagePullBackOff},
		`2 pods cannot pull image "registry.example.com/app:2": an image pull secret is missing`,
		"Unable to retrieve some image pull secrets (regcred)", "create the missing image pull secret")
}

func TestWhyEstimate(t *testing.T) {
	// 2 replicas, maxSurge 1 / maxUnavailable 0, minReadySeconds 30: the
	// first new pod has been Ready 10s (available in 20s), then the last
	// old pod goes and the second new pod comes (Ready after the 2s the
	// live pods took, then 30s): complete in about 52s.
	w := newWorld(2, 2, 1, "app:2")
	rolling := w.d.Spec.Strategy.RollingUpdate
	one, zero := intOrStr(1), intOrStr(0)
	rolling.MaxSurge, rolling.MaxUnavailable = &one, &zero
	w.d.Spec.MinReadySeconds, w.old.Spec.MinReadySeconds, w.new.Spec.MinReadySeconds = 30, 30, 30
	for i := range 2 {
		w.pod(w.old, i, readyFor(time.Hour))
	}
	w.pod(w.new, 0, readyFor(10*time.Second))
	st := w.state()
	w.d.Status.AvailableReplicas, w.new.Status.AvailableReplicas = 2, 0
	r, text := whyText(t, st)
	wantReport(t, r, text, Progressing, nil, "Estimate: completes in about ", "kubectl ctrlkit plan deploy/web -n shop")
	if e := r.Estimate; e == nil || !e.Complete || time.Duration(e.Remaining) < 50*time.Second || time.Duration(e.Remaining) > 54*time.Second {
		t.Errorf("estimate %+v; want complete in 52s ± 2s\n%s", e, text)
	}
	// Without the in-flight pod's progress the plan would see it
	// available at once: 32s.
	p, err := PlanLive(st, WhatIf{}, now, PlanOptions{Seed: 1})
	if err != nil || time.Duration(p.Duration) != time.Duration(r.Estimate.Remaining) {
		t.Errorf("plan %s, %v; want the estimate %s", p.Duration, err, r.Estimate.Remaining)
	}
}

func intOrStr(n int32) intstr.IntOrString { return intstr.FromInt32(n) }
