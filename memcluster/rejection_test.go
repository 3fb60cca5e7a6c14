package memcluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A pod the kubelet rejects ends as a real kubelet leaves it (kubelet
// rejectPod, then its status manager's merge): bound to its node, phase
// Failed with the reason and "Pod was rejected: " and the message, a start
// time, no container statuses, and none of the conditions the kubelet
// owns; and a Warning event from the kubelet on that node names the
// reason. It stays so.
func TestKubeletRejectsPods(t *testing.T) {
	cpu := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	}
	for _, tc := range []struct {
		name     string
		behavior PodBehavior
		annotate map[string]string
		mod      func(*corev1.Pod)
		reason   string
		message  string
	}{
		{name: "OutOfcpu by annotation, from the pod's requests", annotate: map[string]string{FailureAnnotation: string(PodRejected)}, mod: cpu,
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{name: "NodeAffinity by annotation", annotate: map[string]string{FailureAnnotation: string(PodRejected), RejectionReasonAnnotation: "NodeAffinity"},
			reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "UnexpectedAdmissionError by the model", behavior: PodBehavior{Failure: PodRejected, Rejection: Rejection{Reason: "UnexpectedAdmissionError", Message: "boom"}},
			reason: "UnexpectedAdmissionError", message: "boom"},
		{name: "OutOfpods by the model, with the kubelet's message", behavior: PodBehavior{Failure: PodRejected, Rejection: Rejection{Reason: "OutOfpods"}},
			reason: "OutOfpods", message: "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"},
		{name: "OutOfmemory by annotation", annotate: map[string]string{FailureAnnotation: string(PodRejected), RejectionReasonAnnotation: "OutOfmemory"},
			reason: "OutOfmemory", message: "Node didn't have enough resource: memory, requested: 4296015872, used: 0, capacity: 4294967296"},
		{name: "a reason the kubelet has no message for", behavior: PodBehavior{Failure: PodRejected, Rejection: Rejection{Reason: "SysctlForbidden"}},
			reason: "SysctlForbidden", message: "Pod was rejected by the simulated kubelet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, fc := newTestCluster(t)
			addCoreKinds(c)
			k := NewKubelet(c, KubeletConfig{Model: FixedModel(tc.behavior)})
			p := pod("p", "", "")
			p.Annotations = tc.annotate
			if tc.mod != nil {
				tc.mod(p)
			}
			created := must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
			k.Sync()
			fc.Step(time.Hour)
			k.Sync()
			got := must(c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{}))(t)
			want := corev1.PodStatus{
				Phase: corev1.PodFailed, Reason: tc.reason, Message: "Pod was rejected: " + tc.message,
				QOSClass: created.Status.QOSClass, StartTime: ptrTo(metav1.NewTime(t0)), ObservedGeneration: created.Generation,
			}
			if diff := cmp.Diff(want, got.Status); diff != "" {
				t.Errorf("status mismatch (-want +got):\n%s", diff)
			}
			if got.Spec.NodeName != "node-0" {
				t.Errorf("nodeName = %q; want node-0", got.Spec.NodeName)
			}
			c.mu.Lock()
			res := c.kinds[schema.GroupKind{Kind: "Event"}].(*Resource[*corev1.Event])
			c.mu.Unlock()
			events, _, err := res.Namespace("ns").List(ctxT(t), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 1 {
				t.Fatalf("%d events; want the kubelet's one", len(events))
			}
			e := events[0]
			type ev struct {
				Type, Reason, Message, Component, Host, Object string
				Count                                          int32
			}
			if diff := cmp.Diff(ev{"Warning", tc.reason, tc.message, "kubelet", "node-0", "Pod/p", 1},
				ev{e.Type, e.Reason, e.Message, e.Source.Component, e.Source.Host, e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name, e.Count}); diff != "" {
				t.Errorf("event mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Without core kinds there is nowhere to record the event: the pod is
// rejected all the same.
func TestKubeletRejectsWithoutEvents(t *testing.T) {
	c, _ := newTestCluster(t)
	k := NewKubelet(c, KubeletConfig{Model: FixedModel(PodBehavior{Failure: PodRejected})})
	must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	k.Sync()
	if got := podLine(t, c, "p"); got != "node-0 Failed  0 notready" {
		t.Errorf("pod = %q; want it Failed on node-0", got)
	}
}
