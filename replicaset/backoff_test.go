package replicaset_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// rejected is a pod the kubelet refused at at.
func rejected(name string, at time.Time, opts ...podOpt) *corev1.Pod {
	p := newPod(name, append([]podOpt{onNode("n1")}, opts...)...)
	p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu", StartTime: &metav1.Time{Time: at},
		Message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 2500, used: 0, capacity: 2000"}
	return p
}

func TestRejectionBackoff(t *testing.T) {
	ran := rejected("ran", t0.Add(-time.Second))
	ran.Status.Reason = "Evicted"
	ran.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}
	for _, tc := range []struct {
		name   string
		failed []*corev1.Pod
		want   replicaset.Backoff // Latest compared by name
	}{
		{name: "none"},
		{name: "one: replaced at once", failed: []*corev1.Pod{rejected("a", t0)}, want: replicaset.Backoff{Rejected: 1}},
		{name: "two: 10s after the latest", failed: []*corev1.Pod{rejected("a", t0.Add(-time.Minute)), rejected("b", t0.Add(-4*time.Second))},
			want: replicaset.Backoff{Rejected: 2, Wait: 6 * time.Second, Probe: true}},
		{name: "four: 40s", failed: []*corev1.Pod{rejected("a", t0), rejected("b", t0), rejected("c", t0), rejected("d", t0)},
			want: replicaset.Backoff{Rejected: 4, Wait: 40 * time.Second, Probe: true}},
		{name: "many: capped at 5m", failed: manyRejected(30), want: replicaset.Backoff{Rejected: 30, Wait: replicaset.RejectionBackoffMax, Probe: true}},
		{name: "waited out: one pod", failed: []*corev1.Pod{rejected("a", t0.Add(-time.Hour+31*time.Minute)), rejected("b", t0.Add(-time.Minute))},
			want: replicaset.Backoff{Rejected: 2, Probe: true}},
		{name: "outside the window", failed: []*corev1.Pod{rejected("a", t0.Add(-31*time.Minute)), rejected("b", t0.Add(-40*time.Minute))}},
		{name: "a pod that ran does not count", failed: []*corev1.Pod{ran, rejected("b", t0)}, want: replicaset.Backoff{Rejected: 1}},
		{name: "nil entries are skipped", failed: []*corev1.Pod{nil, rejected("b", t0)}, want: replicaset.Backoff{Rejected: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := replicaset.RejectionBackoff(tc.failed, t0)
			latest := ""
			if got.Latest != nil {
				latest = got.Latest.Name
			}
			got.Latest = nil
			if got != tc.want {
				t.Errorf("RejectionBackoff = %+v; want %+v", got, tc.want)
			}
			if (latest == "") != (tc.want.Rejected == 0) {
				t.Errorf("Latest = %q with %d rejected", latest, tc.want.Rejected)
			}
		})
	}
}

func manyRejected(n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, rejected(string(rune('a'+i%26))+strings.Repeat("x", i/26), t0))
	}
	return out
}

// ManageReplicas holds replacements back while rejections are recent, with
// an event naming the kubelet's reason, then creates one pod; with
// ReplaceRejectedAtOnce it creates them all at once, as upstream.
func TestManageReplicasRejectedPodsBackoff(t *testing.T) {
	rs := newRS("web", 3)
	failed := []*corev1.Pod{rejected("a", t0.Add(-5*time.Second), ownedBy(rs)), rejected("b", t0.Add(-5*time.Second), ownedBy(rs)),
		rejected("c", t0.Add(-5*time.Second), ownedBy(rs))}
	for _, tc := range []struct {
		name    string
		atOnce  bool
		at      time.Time
		want    string
		wantErr bool
	}{
		{name: "held back", at: t0, want: "event Warning RejectedPodsBackoff: 3 pods rejected by the kubelet in the last 30m0s, the latest c on node \"n1\": OutOfcpu: Pod was rejected: Node didn't have enough resource: cpu, requested: 2500, used: 0, capacity: 2000; next replacement in 15s\nreplace rejected pods after 15s\nrequeue after 15s\n"},
		{name: "one pod once the backoff is over", at: t0.Add(15 * time.Second), want: "create 1 pod\nexpect 1 creations\n"},
		{name: "upstream", atOnce: true, at: t0, want: "create 3 pods\nexpect 3 creations\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := replicaset.ManageReplicas(replicaset.Input{ReplicaSet: rs, Failed: failed, ExpectationsSatisfied: true,
				ReplaceRejectedAtOnce: tc.atOnce}, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			plan.Status = nil
			if got := plan.String(); got != tc.want {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
	if _, err := replicaset.ManageReplicas(replicaset.Input{ReplicaSet: rs, Failed: []*corev1.Pod{nil}}, t0); err == nil {
		t.Errorf("a nil failed pod is not an error")
	}
}
