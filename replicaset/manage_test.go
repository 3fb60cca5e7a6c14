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
			Pending: &replicaset.Pending{Creations: 2},
			Status:  status(1),
		},
	}, {
		name: "create capped by burst",
		in:   replicaset.Input{ReplicaSet: rs, ExpectationsSatisfied: true, BurstReplicas: 2},
		want: replicaset.Plan{
			Actions: []replicaset.Action{replicaset.CreatePods{Count: 2}},
			Pending: &replicaset.Pending{Creations: 2},
		},
	}, {
		name: "delete surplus, youngest first",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods, ExpectationsSatisfied: true},
		want: replicaset.Plan{
			Actions: []replicaset.Action{replicaset.DeletePods{Pods: []*corev1.Pod{pods[0], pods[1]}}},
			Pending: &replicaset.Pending{Deletions: []types.UID{"uid-web-0", "uid-web-1"}},
			Status:  status(5),
		},
	}, {
		name: "delete capped by burst, unscheduled first",
		in:   replicaset.Input{ReplicaSet: rs, Active: append(pods[:4:4], unscheduled), ExpectationsSatisfied: true, BurstReplicas: 1},
		want: replicaset.Plan{
			Actions: []replicaset.Action{replicaset.DeletePods{Pods: []*corev1.Pod{unscheduled}}},
			Pending: &replicaset.Pending{Deletions: []types.UID{"uid-web-new"}},
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

// The decisions of a sync whose pod cache is behind the controller's own
// creates or deletes, and of one that leaves its status to its pods'
// events: pure functions of the input, the expectations snapshot and now.
func TestManageReplicasUnobserved(t *testing.T) {
	rs := newRS("web", 3, func(rs *appsv1.ReplicaSet) { rs.Generation = 2 }) // status observed generation 1
	pods := ownedPods(rs, 3)
	recorded := &replicaset.Expectation{Add: 1, Timestamp: t0.Add(-time.Minute)}
	status := func(n, terminating int32) *appsv1.ReplicaSetStatus {
		return &appsv1.ReplicaSetStatus{Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			TerminatingReplicas: ptr32(terminating), ObservedGeneration: 1}
	}
	cases := []struct {
		name string
		in   replicaset.Input
		want replicaset.Plan
	}{{
		name: "held: counts written, observedGeneration kept",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods[:2]},
		want: replicaset.Plan{Status: status(2, 0)},
	}, {
		name: "held, and a sync a second after the expectation expires",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods[:2], Expectation: recorded},
		want: replicaset.Plan{Status: status(2, 0), RequeueAfter: replicaset.ExpectationsTimeout + time.Second - time.Minute},
	}, {
		name: "an expectation past its time: a sync in a second",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods[:2], Expectation: &replicaset.Expectation{Add: 1, Timestamp: t0.Add(-time.Hour)}},
		want: replicaset.Plan{Status: status(2, 0), RequeueAfter: time.Second},
	}, {
		name: "pods being deleted count as terminating, whatever the cache says",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods, Deleting: []types.UID{pods[2].UID, pods[0].UID}},
		want: replicaset.Plan{Status: status(1, 2)},
	}, {
		name: "satisfied: observedGeneration advances",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods, ExpectationsSatisfied: true, Expectation: recorded, Deleting: []types.UID{pods[0].UID}},
		want: replicaset.Plan{Status: func() *appsv1.ReplicaSetStatus { s := status(3, 0); s.ObservedGeneration = 2; return s }()},
	}, {
		name: "deferred status: creations leave it to their events",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods[:1], ExpectationsSatisfied: true, DeferStatus: true},
		want: replicaset.Plan{
			Actions:      []replicaset.Action{replicaset.CreatePods{Count: 2}},
			Pending:      &replicaset.Pending{Creations: 2},
			RequeueAfter: replicaset.ExpectationsTimeout + time.Second,
		},
	}, {
		name: "deferred status: nothing to create, the status is written",
		in:   replicaset.Input{ReplicaSet: rs, Active: pods, ExpectationsSatisfied: true, DeferStatus: true},
		want: replicaset.Plan{Status: func() *appsv1.ReplicaSetStatus { s := status(3, 0); s.ObservedGeneration = 2; return s }()},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := replicaset.ManageReplicas(tc.in, t0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ManageReplicas mismatch (-want +got):\n%s", diff)
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
		Pending:      &replicaset.Pending{Creations: 3},
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
