package memcluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pdbClient(c *Cluster, ns string) Client[*policyv1.PodDisruptionBudget] {
	return kindClient[*policyv1.PodDisruptionBudget](c, pdbGK, ns)
}

func budget(name string, min, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: min, MaxUnavailable: maxUnavailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
}

func intOrStr(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

// readyPod creates a pod of app web, Running and Ready (or not).
func readyPod(t *testing.T, c *Cluster, name string, ready bool, owner *metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	p := pod(name, "", "")
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	p = must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return must(c.Pods("ns").UpdateStatus(ctxT(t), p, metav1.UpdateOptions{}))(t)
}

// budgetStatus summarises a budget's status.
func budgetStatus(t *testing.T, c *Cluster, name string) string {
	t.Helper()
	b := must(pdbClient(c, "ns").Get(ctxT(t), name, metav1.GetOptions{}))(t)
	s := b.Status
	out := fmt.Sprintf("gen=%d/%d expected=%d healthy=%d desired=%d allowed=%d disrupted=%d", s.ObservedGeneration, b.Generation,
		s.ExpectedPods, s.CurrentHealthy, s.DesiredHealthy, s.DisruptionsAllowed, len(s.DisruptedPods))
	for _, c := range s.Conditions {
		out += fmt.Sprintf(" %s=%s/%s", c.Type, c.Status, c.Reason)
		if c.Message != "" {
			out += ": " + c.Message
		}
	}
	return out
}

func TestPDBValidation(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	bad := policyv1.UnhealthyPodEvictionPolicyType("Sometimes")
	tests := []struct {
		pdb  *policyv1.PodDisruptionBudget
		want string
	}{
		{budget("both", intOrStr("1"), intOrStr("1")), "spec: Invalid value"},
		{budget("negative", intOrStr("-1"), nil), "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"},
		{budget("percent", nil, intOrStr("101%")), `spec.maxUnavailable: Invalid value: "101%": must not be greater than 100%`},
		{budget("word", nil, intOrStr("lots")), `spec.maxUnavailable: Invalid value: "lots": a valid percent string must be`},
		{&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "policy"}, Spec: policyv1.PodDisruptionBudgetSpec{UnhealthyPodEvictionPolicy: &bad}},
			`spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"`},
	}
	for _, tt := range tests {
		_, err := pdbClient(c, "ns").Create(ctxT(t), tt.pdb, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Create(%s) = %v; want Invalid with %q", tt.pdb.Name, err, tt.want)
		}
	}
	b := must(pdbClient(c, "ns").Create(ctxT(t), budget("ok", intOrStr("50%"), nil), metav1.CreateOptions{}))(t)
	b.ResourceVersion = ""
	if _, err := pdbClient(c, "ns").Update(ctxT(t), b, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("update without a resourceVersion: %v; want Invalid (budgets need one)", err)
	}
}

func TestDisruptionStatus(t *testing.T) {
	now := t0
	ready := func(name string, ok bool, owner types.UID) *corev1.Pod {
		p := pod(name, "rs", owner)
		st := corev1.ConditionFalse
		if ok {
			st = corev1.ConditionTrue
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}
		return p
	}
	deleting := ready("gone", true, "rs-uid")
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	scale := func(ref metav1.OwnerReference, _ string) (types.UID, int32, bool, error) {
		if ref.UID == "rs-uid" {
			return "deploy-uid", 4, true, nil
		}
		return "", 0, false, nil
	}
	pods := []*corev1.Pod{ready("a", true, "rs-uid"), ready("b", true, "rs-uid"), ready("c", false, "rs-uid"), deleting}
	tests := []struct {
		name     string
		pdb      *policyv1.PodDisruptionBudget
		pods     []*corev1.Pod
		want     string
		wantErr  string
		disruped map[string]metav1.Time
	}{
		{name: "minAvailable count", pdb: budget("b", intOrStr("1"), nil), pods: pods, want: "expected=4 healthy=2 desired=1 allowed=1"},
		{name: "minAvailable percent of the controllers' scale", pdb: budget("b", intOrStr("50%"), nil), pods: pods, want: "expected=4 healthy=2 desired=2 allowed=0"},
		{name: "maxUnavailable, rounded up", pdb: budget("b", nil, intOrStr("30%")), pods: pods, want: "expected=4 healthy=2 desired=2 allowed=0"},
		{name: "maxUnavailable count", pdb: budget("b", nil, intOrStr("3")), pods: pods, want: "expected=4 healthy=2 desired=1 allowed=1"},
		{name: "no pods: nothing allowed", pdb: budget("b", intOrStr("0"), nil), want: "expected=0 healthy=0 desired=0 allowed=0"},
		{name: "a recently evicted pod does not count", pdb: budget("b", intOrStr("1"), nil), pods: pods,
			disruped: map[string]metav1.Time{"a": {Time: now.Add(-time.Minute)}}, want: "expected=4 healthy=1 desired=1 allowed=0 disrupted=1"},
		{name: "an eviction older than two minutes is forgotten", pdb: budget("b", intOrStr("1"), nil), pods: pods,
			disruped: map[string]metav1.Time{"a": {Time: now.Add(-3 * time.Minute)}}, want: "expected=4 healthy=2 desired=1 allowed=1"},
		{name: "a pod without a known controller", pdb: budget("b", nil, intOrStr("1")), pods: []*corev1.Pod{ready("x", true, "other")},
			wantErr: `found no controllers for pod "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.pdb.Generation = 3
			tt.pdb.Status.DisruptedPods = tt.disruped
			st, changed, err := disruptionStatus(tt.pdb, tt.pods, scale, now)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("disruptionStatus() error = %v; want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || !changed {
				t.Fatalf("disruptionStatus() = changed %t, %v", changed, err)
			}
			got := fmt.Sprintf("expected=%d healthy=%d desired=%d allowed=%d", st.ExpectedPods, st.CurrentHealthy, st.DesiredHealthy, st.DisruptionsAllowed)
			if len(st.DisruptedPods) > 0 {
				got += fmt.Sprintf(" disrupted=%d", len(st.DisruptedPods))
			}
			if got != tt.want || st.ObservedGeneration != 3 || len(st.Conditions) != 1 {
				t.Errorf("disruptionStatus() = %s, observed %d, conditions %v; want %s", got, st.ObservedGeneration, st.Conditions, tt.want)
			}
			// The same status again is no change.
			tt.pdb.Status = st
			if _, changed, _ := disruptionStatus(tt.pdb, tt.pods, scale, now); changed {
				t.Error("disruptionStatus() of its own result: changed")
			}
		})
	}
}

func TestDisruptionController(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	ctx := ctxT(t)
	d := deployment("web")
	d.Spec.Replicas = ptrTo[int32](4)
	d = must(c.Deployments("ns").Create(ctx, d, metav1.CreateOptions{}))(t)
	rs := must(c.ReplicaSets("ns").Create(ctx, replicaSet("web", d), metav1.CreateOptions{}))(t)
	ref := ownerRef("ReplicaSet", "web", rs.UID)
	must(pdbClient(c, "ns").Create(ctx, budget("half", intOrStr("50%"), nil), metav1.CreateOptions{}))(t)
	if got, want := budgetStatus(t, c, "half"), "gen=1/1 expected=0 healthy=0 desired=0 allowed=0 disrupted=0 DisruptionAllowed=False/InsufficientPods"; got != want {
		t.Errorf("status of a new budget = %s; want %s", got, want)
	}
	for i := range 4 {
		readyPod(t, c, fmt.Sprintf("p%d", i), i < 3, &ref)
	}
	if got, want := budgetStatus(t, c, "half"), "gen=1/1 expected=4 healthy=3 desired=2 allowed=1 disrupted=0 DisruptionAllowed=True/SufficientPods"; got != want {
		t.Errorf("status with 3 of 4 ready = %s; want %s", got, want)
	}
	// A controller the budget cannot scale: the controller fails safe.
	odd := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "t-uid", Controller: ptrTo(true)}
	readyPod(t, c, "odd", true, &odd)
	want := `gen=1/1 expected=4 healthy=3 desired=2 allowed=0 disrupted=0 DisruptionAllowed=False/SyncFailed: no matches for kind "Thing" in version "example.com/v1"`
	if got := budgetStatus(t, c, "half"); got != want {
		t.Errorf("status with an unknown controller = %s; want %s", got, want)
	}
	if err := c.Pods("ns").Delete(ctx, "odd", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A spec change: observedGeneration follows.
	b := must(pdbClient(c, "ns").Get(ctx, "half", metav1.GetOptions{}))(t)
	b.Spec.MinAvailable = intOrStr("1")
	must(pdbClient(c, "ns").Update(ctx, b, metav1.UpdateOptions{}))(t)
	if got, want := budgetStatus(t, c, "half"), "gen=2/2 expected=4 healthy=3 desired=1 allowed=2 disrupted=0 DisruptionAllowed=True/SufficientPods"; got != want {
		t.Errorf("status after a spec change = %s; want %s", got, want)
	}
}

func TestDisruptionControllerOff(t *testing.T) {
	c := New(Config{Seed: 1, NoDisruptionController: true})
	addCoreKinds(c)
	must(pdbClient(c, "ns").Create(ctxT(t), budget("b", intOrStr("1"), nil), metav1.CreateOptions{}))(t)
	readyPod(t, c, "p", true, nil)
	if got, want := budgetStatus(t, c, "b"), "gen=0/1 expected=0 healthy=0 desired=0 allowed=0 disrupted=0"; got != want {
		t.Errorf("status without the controller = %s; want %s", got, want)
	}
}

func TestControllerScale(t *testing.T) {
	c, _ := newTestCluster(t)
	d := deployment("web")
	d.Spec.Replicas = ptrTo[int32](5)
	d = must(c.Deployments("ns").Create(ctxT(t), d, metav1.CreateOptions{}))(t)
	owned := must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("owned", d), metav1.CreateOptions{}))(t)
	alone := replicaSet("alone", nil)
	alone.Spec.Replicas = ptrTo[int32](2)
	alone = must(c.ReplicaSets("ns").Create(ctxT(t), alone, metav1.CreateOptions{}))(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tt := range []struct {
		ref     metav1.OwnerReference
		want    string
		wantErr string
	}{
		{ref: ownerRef("ReplicaSet", "owned", owned.UID), want: fmt.Sprintf("%s 5", d.UID)},
		{ref: ownerRef("ReplicaSet", "alone", alone.UID), want: fmt.Sprintf("%s 2", alone.UID)},
		{ref: ownerRef("Deployment", "web", d.UID), want: fmt.Sprintf("%s 5", d.UID)},
		{ref: ownerRef("ReplicaSet", "gone", "x"), want: "not found"},
		{ref: metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u"}, wantErr: "pods does not implement the scale subresource"},
	} {
		uid, n, found, err := c.controllerScaleLocked(tt.ref, "ns")
		got := fmt.Sprintf("%s %d", uid, n)
		if !found {
			got = "not found"
		}
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("controllerScaleLocked(%s) error = %v; want %s", tt.ref.Name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("controllerScaleLocked(%s %s) = %s, %v; want %s", tt.ref.Kind, tt.ref.Name, got, err, tt.want)
		}
	}
}
