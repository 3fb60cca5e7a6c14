package memcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func eviction(name string) *policyv1.Eviction {
	return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

// cause returns the message of err's DisruptionBudget cause.
func cause(err error) string {
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Details == nil {
		return ""
	}
	for _, c := range st.Status().Details.Causes {
		if c.Type == policyv1.DisruptionBudgetCause {
			return c.Message
		}
	}
	return ""
}

func TestEvictWithoutBudget(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	p := pod("bound", "", "")
	p.Spec.NodeName = "node-0"
	p = must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
	p.Status.Phase = corev1.PodRunning
	must(c.Pods("ns").UpdateStatus(ctxT(t), p, metav1.UpdateOptions{}))(t)
	if err := c.Evict(ctxT(t), eviction("bound")); err != nil {
		t.Fatal(err)
	}
	got := must(c.Pods("ns").Get(ctxT(t), "bound", metav1.GetOptions{}))(t)
	cond := got.Status.Conditions[len(got.Status.Conditions)-1]
	if got.DeletionTimestamp == nil || cond.Type != corev1.DisruptionTarget || cond.Status != corev1.ConditionTrue ||
		cond.Reason != "EvictionByEvictionAPI" || cond.Message != "Eviction API: evicting" {
		t.Errorf("evicted pod: deletionTimestamp %v, last condition %+v; want terminating, DisruptionTarget", got.DeletionTimestamp, cond)
	}
	// The eviction's options are the deletion's.
	zero := int64(0)
	ev := eviction("bound")
	ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: &zero}
	if err := c.Evict(ctxT(t), ev); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pods("ns").Get(ctxT(t), "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod evicted with a zero grace period: %v; want gone", err)
	}
	if err := c.Evict(ctxT(t), eviction("bound")); !apierrors.IsNotFound(err) {
		t.Errorf("evicting a missing pod: %v; want NotFound", err)
	}
}

func TestEvictWithBudget(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	ctx := ctxT(t)
	must(pdbClient(c, "ns").Create(ctx, budget("web", intOrStr("2"), nil), metav1.CreateOptions{}))(t)
	for _, name := range []string{"a", "b", "c"} {
		readyPod(t, c, name, true, nil)
	}
	if err := c.Evict(ctx, eviction("a")); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	if got, want := budgetStatus(t, c, "web"), "gen=1/1 expected=2 healthy=2 desired=2 allowed=0 disrupted=0 DisruptionAllowed=False/InsufficientPods"; got != want {
		t.Errorf("status after the eviction = %s; want %s", got, want)
	}
	err := c.Evict(ctx, eviction("b"))
	if !apierrors.IsTooManyRequests(err) || err.Error() != "Cannot evict pod as it would violate the pod's disruption budget." ||
		cause(err) != "The disruption budget web needs 2 healthy pods and has 2 currently" {
		t.Errorf("eviction beyond the budget: %v (%s); want 429 with the budget's cause", err, cause(err))
	}
	if _, err := c.Pods("ns").Get(ctx, "b", metav1.GetOptions{}); err != nil {
		t.Errorf("pod b after a refused eviction: %v", err)
	}
	// A pending pod, or a finished one, goes whatever the budget.
	must(c.Pods("ns").Create(ctx, pod("pending", "", ""), metav1.CreateOptions{}))(t)
	if err := c.Evict(ctx, eviction("pending")); err != nil {
		t.Errorf("evicting a pending pod: %v", err)
	}
	done := must(c.Pods("ns").Create(ctx, pod("done", "", ""), metav1.CreateOptions{}))(t)
	done.Status.Phase = corev1.PodSucceeded
	must(c.Pods("ns").UpdateStatus(ctx, done, metav1.UpdateOptions{}))(t)
	if err := c.Evict(ctx, eviction("done")); err != nil {
		t.Errorf("evicting a finished pod: %v", err)
	}
	if _, err := c.Pods("ns").Get(ctx, "done", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("finished pod after its eviction: %v; want gone", err)
	}
	// A second budget: kube-apiserver does not choose.
	must(pdbClient(c, "ns").Create(ctx, budget("other", nil, intOrStr("1")), metav1.CreateOptions{}))(t)
	err = c.Evict(ctx, eviction("b"))
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Code != 500 ||
		err.Error() != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Errorf("eviction with two budgets: %v; want the 500 failure", err)
	}
}

func TestEvictUnhealthyPods(t *testing.T) {
	always := policyv1.AlwaysAllow
	tests := []struct {
		name    string
		ready   int // ready pods besides the unready one
		policy  *policyv1.UnhealthyPodEvictionPolicyType
		wantErr bool
	}{
		{name: "IfHealthyBudget, budget met: evicted without spending it", ready: 2},
		{name: "IfHealthyBudget, budget not met: refused", ready: 1, wantErr: true},
		{name: "AlwaysAllow, budget not met: evicted", ready: 1, policy: &always},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCluster(t)
			addCoreKinds(c)
			b := budget("web", intOrStr("2"), nil)
			b.Spec.UnhealthyPodEvictionPolicy = tt.policy
			must(pdbClient(c, "ns").Create(ctxT(t), b, metav1.CreateOptions{}))(t)
			for i := range tt.ready {
				readyPod(t, c, string(rune('a'+i)), true, nil)
			}
			readyPod(t, c, "sick", false, nil)
			before := must(pdbClient(c, "ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
			err := c.Evict(ctxT(t), eviction("sick"))
			if tt.wantErr != apierrors.IsTooManyRequests(err) || !tt.wantErr && err != nil {
				t.Fatalf("Evict() = %v; want an error: %t", err, tt.wantErr)
			}
			after := must(pdbClient(c, "ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
			if after.Status.DisruptionsAllowed != before.Status.DisruptionsAllowed {
				t.Errorf("disruptionsAllowed %d -> %d; want unchanged", before.Status.DisruptionsAllowed, after.Status.DisruptionsAllowed)
			}
		})
	}
}

func TestEvictRefusals(t *testing.T) {
	c := New(Config{Seed: 1, NoDisruptionController: true, NoNamespaceController: true, RequireNamespaces: true})
	addCoreKinds(c)
	ctx := ctxT(t)
	createNamespace(t, c, "ns")
	must(pdbClient(c, "ns").Create(ctx, budget("web", intOrStr("1"), nil), metav1.CreateOptions{}))(t)
	a := readyPod(t, c, "a", true, nil)
	// The controller is off: the budget's status is behind its spec.
	err := c.Evict(ctx, eviction("a"))
	if !apierrors.IsTooManyRequests(err) || cause(err) != "The disruption budget web is still being processed by the server." {
		t.Errorf("eviction under an unprocessed budget: %v (%s); want 429", err, cause(err))
	}
	if d, ok := apierrors.SuggestsClientDelay(err); !ok || d != 10 {
		t.Errorf("retry after %d, %t; want 10 seconds", d, ok)
	}
	stale := "1"
	ev := eviction("a")
	ev.DeleteOptions = &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}}
	if err := pdbClient(c, "ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Evict(ctx, ev); !apierrors.IsConflict(err) ||
		err.Error() != `Operation cannot be fulfilled on Pod "a": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (`+a.ResourceVersion+`). The object might have been modified` {
		t.Errorf("eviction with a stale precondition: %v; want Conflict", err)
	}
	if err := c.Namespaces().Delete(ctx, "ns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Evict(ctx, eviction("a")); !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Errorf("eviction in a terminating namespace: %v; want Forbidden", err)
	}
}

func TestEvictionREST(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	rc := newRESTClient(t, c)
	for _, name := range []string{"a", "b", "c"} {
		readyPod(t, c, name, true, nil)
	}
	must(pdbClient(c, "ns").Create(ctxT(t), budget("web", intOrStr("2"), nil), metav1.CreateOptions{}))(t)
	path := "/api/v1/namespaces/ns/pods/"
	for _, tt := range []struct {
		name string
		req  req
		want string
		body string
	}{
		{"evict", req{method: "POST", path: path + "a/eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"a"}}`},
			"201 Status Success", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}`},
		{"beyond the budget, as policy/v1beta1", req{method: "POST", path: path + "b/eviction", body: `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"b"}}`},
			"429 Status TooManyRequests", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web needs 2 healthy pods and has 2 currently"}]},"code":429}`},
		{"another name", req{method: "POST", path: path + "b/eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"c"}}`}, "400 Status BadRequest", ""},
		{"not a post", req{method: "GET", path: path + "b/eviction"}, "405 Status MethodNotAllowed", ""},
		{"another kind", req{method: "POST", path: "/api/v1/namespaces/ns/services/b/eviction", body: `{}`}, "404 Status NotFound", ""},
	} {
		resp, body := rc.do(tt.req)
		if got := summary(resp.StatusCode, body); got != tt.want || tt.body != "" && strings.TrimSpace(string(body)) != tt.body {
			t.Errorf("%s: %s %s = %s %s; want %s %s", tt.name, tt.req.method, tt.req.path, got, body, tt.want, tt.body)
		}
	}
}
