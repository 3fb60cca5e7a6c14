package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/planner"
)

// TestSimulateQuota: pods created after the start go through the
// namespace's LimitRanges and ResourceQuotas; a refusal slows or stalls
// the rollout, never fails the simulation.
func TestSimulateQuota(t *testing.T) {
	steady := planner.PodModel{ReadyAfter: 10 * time.Second, Shutdown: 5 * time.Second}
	cpuDefault := corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, DefaultRequest: list("cpu", "500m"), Default: list("cpu", "500m")}}}}
	leaving := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch-1", Namespace: "default",
		DeletionTimestamp: ptr(metav1.NewTime(t0.Add(5 * time.Second))), DeletionGracePeriodSeconds: ptr[int64](30)}}
	staying := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "default"}}
	type got struct {
		Complete bool
		Duration time.Duration
		PeakPods int32
		Refused  bool
	}
	tests := []struct {
		name     string
		replicas int32
		surge    int
		// current is the live ReplicaSet's spec.replicas and pods (the
		// rest a quota refused); image is its image.
		current, existing int32
		image             string
		minReady          int32
		opts              planner.Options
		want              got
	}{
		{name: "no quota", replicas: 3, surge: 2, current: 3, existing: 3, image: "web:1",
			want: got{Complete: true, Duration: 20 * time.Second, PeakPods: 6}},
		{name: "slowed: each old pod gone makes room for a new one", replicas: 3, surge: 2, current: 3, existing: 3, image: "web:1",
			opts: planner.Options{Quotas: []planner.Quota{podQuota(4)}},
			want: got{Complete: true, Duration: 40 * time.Second, PeakPods: 4, Refused: true}},
		{name: "slowed, with minReadySeconds: a refused sync still wakes up when a pod is available", replicas: 3, surge: 2, current: 3, existing: 3,
			image: "web:1", minReady: 2, opts: planner.Options{Quotas: []planner.Quota{podQuota(4)}},
			want: got{Complete: true, Duration: 46 * time.Second, PeakPods: 4, Refused: true}},
		{name: "a batch of creations never overshoots: 100 replicas at 25/0 in 110 pods, 10 a wave", replicas: 100, surge: 25, current: 100, existing: 100,
			image: "web:1", opts: planner.Options{Quotas: []planner.Quota{podQuota(110)}},
			want: got{Complete: true, Duration: 145 * time.Second, PeakPods: 110, Refused: true}},
		{name: "blocked: no surge room and maxUnavailable 0", replicas: 3, surge: 1, current: 3, existing: 3, image: "web:1",
			opts: planner.Options{Quotas: []planner.Quota{podQuota(3)}, Horizon: 10 * time.Minute},
			want: got{PeakPods: 3, Refused: true}},
		{name: "another pod leaving frees the room at its deletion timestamp", replicas: 3, surge: 1, current: 3, existing: 3, image: "web:1",
			opts: planner.Options{Quotas: []planner.Quota{podQuota(4)}, Outside: []*corev1.Pod{leaving}, Now: t0},
			want: got{Complete: true, Duration: 45 * time.Second, PeakPods: 4, Refused: true}},
		{name: "another pod staying takes the room for good", replicas: 3, surge: 1, current: 3, existing: 3, image: "web:1",
			opts: planner.Options{Quotas: []planner.Quota{podQuota(4)}, Outside: []*corev1.Pod{staying}, Now: t0, Horizon: 10 * time.Minute},
			want: got{PeakPods: 3, Refused: true}},
		{name: "scaled up into a full quota: the pods refused stay missing", replicas: 6, surge: 1, current: 6, existing: 4, image: "web:2",
			opts: planner.Options{Quotas: []planner.Quota{podQuota(4)}, Horizon: 10 * time.Minute},
			want: got{PeakPods: 4, Refused: true}},
		{name: "the pods refused are created once the quota has room", replicas: 6, surge: 1, current: 6, existing: 4, image: "web:2",
			opts: planner.Options{Quotas: []planner.Quota{podQuota(6)}},
			want: got{Complete: true, Duration: 10 * time.Second, PeakPods: 6}},
		{name: "LimitRange defaults count against a cpu quota: the surge fits, a terminating pod counts until gone", replicas: 2, surge: 1, current: 2,
			existing: 2, image: "web:1",
			opts: planner.Options{Quotas: []planner.Quota{{Name: "compute", Hard: list("requests.cpu", "1500m")}}, LimitRanges: []corev1.LimitRange{cpuDefault}},
			want: got{Complete: true, Duration: 25 * time.Second, PeakPods: 3, Refused: true}},
		{name: "LimitRange defaults count against a cpu quota: no room", replicas: 2, surge: 1, current: 2, existing: 2, image: "web:1",
			opts: planner.Options{Quotas: []planner.Quota{{Name: "compute", Hard: list("requests.cpu", "1")}}, LimitRanges: []corev1.LimitRange{cpuDefault},
				Horizon: 10 * time.Minute},
			want: got{PeakPods: 2, Refused: true}},
		{name: "a cpu quota without defaults refuses pods that set no cpu", replicas: 2, surge: 1, current: 2, existing: 2, image: "web:1",
			opts: planner.Options{Quotas: []planner.Quota{{Name: "compute", Hard: list("requests.cpu", "10")}}, Horizon: 10 * time.Minute},
			want: got{PeakPods: 2, Refused: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := web(tt.replicas, "web:2", num(tt.surge), num(0))
			d.Spec.MinReadySeconds = tt.minReady
			cur := previous(t, d, tt.image)
			cur[0].Spec.Replicas = ptr(tt.current)
			opts := tt.opts
			opts.Seed = 1
			opts.Existing = map[string]int32{cur[0].Name: tt.existing}
			tl, err := planner.Simulate(d, cur, steady, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got{tl.Complete, tl.Duration, tl.PeakPods, tl.Refused > 0}); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s\n%s", diff, tl)
			}
			if tl.Refused > 0 && !strings.Contains(tl.String(), "Warning FailedCreate: Error creating: pods \"web-") {
				t.Errorf("no FailedCreate in the timeline:\n%s", tl)
			}
			if !tl.Complete && (tl.Stall == nil || len(tl.Stall.Blockers) == 0) {
				t.Errorf("a stalled plan without its blockers:\n%s", tl)
			}
			for _, v := range planner.Check(tl.Trace(), d) {
				t.Errorf("Check: %v", v)
			}
		})
	}
}
