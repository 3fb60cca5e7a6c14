package replicaset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// ownedPods returns n ready pods of rs named <rs>-0 … <rs>-(n-1), created
// i minutes before t0 and ready since then.
func ownedPods(rs *appsv1.ReplicaSet, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		at := t0.Add(-time.Duration(i+1) * time.Minute)
		out[i] = newPod(fmt.Sprintf("%s-%d", rs.Name, i), ownedBy(rs), onNode("n1"), createdAt(at), readySince(at))
	}
	return out
}

func TestManageReplicas(t *testing.T) {
	rs := newRS("web", 3)
	status := func(n int32) *appsv1.ReplicaSetStatus {
		return &appsv1.ReplicaSetStatus{Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n, TerminatingReplicas: ptr32(0), ObservedGeneration: 1}
	}
	settled := rs.DeepCopy()
	settled.Status = *status(3)
	deleting := rs.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	pods := ownedPods(rs, 5)
	unscheduled := newPod("web-new", ownedBy(rs))

	cases := []struct {
		name string
		in   replicaset.Input
		want replicaset.Plan
	}{{
		name: "create missing",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods[:1], ExpectationsSatisfied: true},
		want: replicaset.Plan{
			Actions: []replicaset.Action{replicaset.CreatePods{Count: 2}},
			Expect:  &replicaset.Expect{Creations: 2},
			Status:  status(1),
		},
	}, {
		name: "create capped by burst",
		in:   replicaset.Input{ReplicaSet: rs, ExpectationsSatisfied: true, BurstReplicas: 2},
		want: replicaset.Plan{
			Actions: []replicaset.Action{replicaset.CreatePods{Count: 2}},
			Expect:  &replicaset.Expect{Creations: 2},
		},
	}, {
		name: "delete surplus, youngest first",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods, ExpectationsSatisfied: true},
		want: replicaset.Plan{
			Actions: []replicaset.Action{replicaset.DeletePods{Pods: []*corev1.Pod{pods[0], pods[1]}}},
			Expect:  &replicaset.Expect{Deletions: []types.UID{"uid-web-0", "uid-web-1"}},
			Status:  status(5),
		},
	}, {
		name: "delete capped by burst, unscheduled first",
		in:   replicaset.Input{ReplicaSet: rs, Active: append(pods[:4:4], unscheduled), ExpectationsSatisfied: true, BurstReplicas: 1},
		want: replicaset.Plan{
			Actions: []replicaset.Action{replicaset.DeletePods{Pods: []*corev1.Pod{unscheduled}}},
			Expect:  &replicaset.Expect{Deletions: []types.UID{"uid-web-new"}},
			Status: &appsv1.ReplicaSetStatus{Replicas: 5, FullyLabeledReplicas: 5, ReadyReplicas: 4, AvailableReplicas: 4,
				TerminatingReplicas: ptr32(0), ObservedGeneration: 1},
		},
	}, {
		name: "settled: nothing",
		in:   replicaset.Input{ReplicaSet: settled, Active: pods[:3], ExpectationsSatisfied: true},
		want: replicaset.Plan{},
	}, {
		name: "expectations pending: status only",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods[:1]},
		want: replicaset.Plan{Status: status(1)},
	}, {
		name: "being deleted: status only",
		in:   replicaset.Input{ReplicaSet: deleting, Active: pods, ExpectationsSatisfied: true},
		want: replicaset.Plan{Status: status(5)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := clonePods(tc.in.Active)
			got, err := replicaset.ManageReplicas(tc.in, t0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ManageReplicas mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.in.Active); diff != "" {
				t.Errorf("ManageReplicas modified its pods (-before +after):\n%s", diff)
			}
		})
	}
}

func TestManageReplicasRequeue(t *testing.T) {
	rs := newRS("web", 1, func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = 30 })
	pods := []*corev1.Pod{newPod("a", ownedBy(rs), readySince(t0.Add(-10*time.Second)))}
	got, err := replicaset.ManageReplicas(replicaset.Input{ReplicaSet: rs, Active: pods, ExpectationsSatisfied: true}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequeueAfter != 20*time.Second {
		t.Errorf("RequeueAfter = %v; want 20s", got.RequeueAfter)
	}
	if got.Status == nil || got.Status.ReadyReplicas != 1 || got.Status.AvailableReplicas != 0 {
		t.Errorf("Status = %+v; want ready 1, available 0", got.Status)
	}
}

func TestSlowStartBatches(t *testing.T) {
	cases := []struct {
		count, initial int
		want           []int
	}{
		{0, 1, nil},
		{1, 1, []int{1}},
		{10, 1, []int{1, 2, 4, 3}},
		{15, 1, []int{1, 2, 4, 8}},
		{16, 1, []int{1, 2, 4, 8, 1}},
		{10, 3, []int{3, 6, 1}},
		{2, 5, []int{2}},
		{5, 0, nil},
	}
	for _, tc := range cases {
		got := replicaset.SlowStartBatches(tc.count, tc.initial)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("SlowStartBatches(%d, %d) mismatch (-want +got):\n%s", tc.count, tc.initial, diff)
		}
	}
}

func TestPlanString(t *testing.T) {
	p := replicaset.Plan{
		Actions: []replicaset.Action{
			replicaset.CreatePods{Count: 3},
			replicaset.CreatePods{Count: 1},
			replicaset.DeletePods{Pods: []*corev1.Pod{newPod("web-abc12")}},
			replicaset.DeletePods{Pods: []*corev1.Pod{newPod("a"), newPod("b")}},
			replicaset.Event{Type: corev1.EventTypeNormal, Reason: "R", Message: "m"},
		},
		Expect:       &replicaset.Expect{Creations: 3},
		Status:       &appsv1.ReplicaSetStatus{Replicas: 2, TerminatingReplicas: ptr32(0), ObservedGeneration: 4},
		RequeueAfter: time.Second,
	}
	want := strings.Join([]string{
		"create 3 pods",
		"create 1 pod",
		"delete pod web-abc12",
		"delete 2 pods a, b",
		"event Normal R: m",
		"expect 3 creations",
		"status replicas=2 fullyLabeled=0 ready=0 available=0 terminating=0 observedGeneration=4",
		"requeue after 1s",
		"",
	}, "\n")
	if diff := cmp.Diff(want, p.String()); diff != "" {
		t.Errorf("Plan.String mismatch (-want +got):\n%s", diff)
	}
	if got := (replicaset.Plan{}).String(); got != "" {
		t.Errorf("zero Plan.String() = %q; want empty", got)
	}
}

func TestNewPod(t *testing.T) {
	rs := newRS("web", 1)
	rs.Spec.Template.Annotations = map[string]string{"a": "b"}
	rs.Spec.Template.Finalizers = []string{"f"}
	before := rs.DeepCopy()
	got, err := replicaset.NewPod(rs)
	if err != nil {
		t.Fatal(err)
	}
	tru := true
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, GenerateName: "web-",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}, Finalizers: []string{"f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: &tru, BlockOwnerDeletion: &tru}},
		},
		Spec: rs.Spec.Template.Spec,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewPod mismatch (-want +got):\n%s", diff)
	}
	got.Spec.Containers[0].Image = "changed"
	got.Labels["x"] = "y"
	if diff := cmp.Diff(before, rs); diff != "" {
		t.Errorf("NewPod result aliases the template (-before +after):\n%s", diff)
	}

	// A prefix that does not validate is used without the dash (upstream
	// getPodsPrefix); only names that are not DNS subdomains get there.
	odd := newRS("Web", 1)
	if got, _ := replicaset.NewPod(odd); got.GenerateName != "Web" {
		t.Errorf("NewPod(%q).GenerateName = %q; want %q", odd.Name, got.GenerateName, "Web")
	}
	rs.Spec.Template.Labels = nil
	if _, err := replicaset.NewPod(rs); err != replicaset.ErrNoLabels {
		t.Errorf("NewPod(no labels) error = %v; want ErrNoLabels", err)
	}
}
