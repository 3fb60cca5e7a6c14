package rollout

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCompleteProgressingTimedOut(t *testing.T) {
	d := deploy(3, "1", "0")
	d.Generation = 2
	d.Status = appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3}
	done := appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 2}
	if !DeploymentComplete(d, done) {
		t.Error("complete status not complete")
	}
	stale := done
	stale.ObservedGeneration = 1
	if DeploymentComplete(d, stale) || DeploymentComplete(nil, done) {
		t.Error("stale generation / nil deployment reported complete")
	}
	for name, tc := range map[string]struct {
		st   appsv1.DeploymentStatus
		want bool
	}{
		"more updated": {appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}, true},
		"fewer old":    {appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3}, true},
		"more ready":   {appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 2, ReadyReplicas: 4, AvailableReplicas: 3}, true},
		"more avail":   {appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 4}, true},
		"same":         {d.Status, false},
		"worse":        {appsv1.DeploymentStatus{Replicas: 5, UpdatedReplicas: 2, ReadyReplicas: 2}, false},
	} {
		if got := DeploymentProgressing(d, tc.st); got != tc.want {
			t.Errorf("DeploymentProgressing(%s) = %v; want %v", name, got, tc.want)
		}
	}

	progressing := func(reason string, updated time.Time) appsv1.DeploymentStatus {
		return appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
			cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, reason, "", updated, updated)}}
	}
	noDeadline := d.DeepCopy()
	noDeadline.Spec.ProgressDeadlineSeconds = ptr[int32](math.MaxInt32)
	tests := []struct {
		name string
		d    *appsv1.Deployment
		st   appsv1.DeploymentStatus
		now  time.Time
		want bool
	}{
		{"exactly at the deadline: not yet", d, progressing(ReasonReplicaSetUpdated, t0), t0.Add(600 * time.Second), false},
		{"one nanosecond past", d, progressing(ReasonReplicaSetUpdated, t0), t0.Add(600*time.Second + 1), true},
		{"already timed out", d, progressing(ReasonProgressDeadlineExceeded, t0), t0, true},
		{"completed rollouts never time out", d, progressing(ReasonNewReplicaSetAvailable, t0), t0.Add(time.Hour), false},
		{"no condition", d, appsv1.DeploymentStatus{}, t0.Add(time.Hour), false},
		{"no deadline", noDeadline, progressing(ReasonReplicaSetUpdated, t0), t0.Add(time.Hour), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeploymentTimedOut(tc.d, tc.st, tc.now); got != tc.want {
				t.Errorf("DeploymentTimedOut() = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestNextProgressCheck(t *testing.T) {
	d := deploy(3, "1", "0")
	d.Status.Conditions = []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, "", t0, t0)}
	st := appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1}
	timedOut := d.DeepCopy()
	timedOut.Status.Conditions[0].Reason = ReasonProgressDeadlineExceeded
	noCond := deploy(3, "1", "0")
	tests := []struct {
		name         string
		d            *appsv1.Deployment
		st           appsv1.DeploymentStatus
		now          time.Time
		want         ProgressCheck
		wantUpstream time.Duration
	}{
		{"3 minutes in: 7 minutes left", d, st, t0.Add(3 * time.Minute), ProgressCheck{Needed: true, Remaining: 7 * time.Minute, After: 7*time.Minute + time.Second}, 7 * time.Minute},
		{"under a second: now, rate-limited", d, st, t0.Add(600*time.Second - 999*time.Millisecond), ProgressCheck{Needed: true, RateLimited: true}, 0},
		{"exactly one second left", d, st, t0.Add(599 * time.Second), ProgressCheck{Needed: true, Remaining: time.Second, After: 2 * time.Second}, time.Second},
		{"past the deadline", d, st, t0.Add(time.Hour), ProgressCheck{Needed: true, RateLimited: true}, 0},
		{"complete", d, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 1}, t0, ProgressCheck{}, -1},
		{"already timed out", timedOut, st, t0, ProgressCheck{}, -1},
		{"no condition", noCond, st, t0, ProgressCheck{}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := nextProgressCheck(tc.d, tc.st, tc.now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nextProgressCheck mismatch (-want +got):\n%s", diff)
			}
			if got.Upstream() != tc.wantUpstream {
				t.Errorf("Upstream() = %v; want %v", got.Upstream(), tc.wantUpstream)
			}
		})
	}
}

func TestSyncStatus(t *testing.T) {
	t1 := t0.Add(time.Minute)
	availTrue := cond(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", t0, t0)
	base := func(progress ...appsv1.DeploymentCondition) *appsv1.Deployment {
		d := deploy(3, "1", "0")
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 4, AvailableReplicas: 4, UnavailableReplicas: 0,
			TerminatingReplicas: ptr[int32](0),
			Conditions:          append([]appsv1.DeploymentCondition{availTrue}, progress...)}
		return d
	}
	newRS := func(n int32) *appsv1.ReplicaSet {
		return rs("new", 5, n, tpl("v2"), func(r *appsv1.ReplicaSet) { r.Status.TerminatingReplicas = ptr[int32](0) })
	}
	oldRS := func(n int32) *appsv1.ReplicaSet {
		return rs("old", 0, n, func(r *appsv1.ReplicaSet) { r.Status.TerminatingReplicas = ptr[int32](0) })
	}
	updatedAt := func(ts time.Time, lt time.Time) appsv1.DeploymentCondition {
		return cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, `ReplicaSet "new" is progressing.`, ts, lt)
	}
	failing := rs("old", 0, 3, func(r *appsv1.ReplicaSet) {
		r.Status.TerminatingReplicas = ptr[int32](0)
		r.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota", LastTransitionTime: metav1.NewTime(t0)}}
	})
	tests := []struct {
		name        string
		d           *appsv1.Deployment
		rss         []*appsv1.ReplicaSet
		newRS       *appsv1.ReplicaSet
		now         time.Time
		wantCond    []appsv1.DeploymentCondition
		wantChanged bool
		wantCheck   ProgressCheck
	}{
		{
			name: "progress: True/ReplicaSetUpdated keeps the transition time",
			d:    base(updatedAt(t0, t0)), rss: []*appsv1.ReplicaSet{oldRS(2), newRS(2)}, newRS: newRS(2), now: t1,
			wantCond:    []appsv1.DeploymentCondition{availTrue, updatedAt(t1, t0)},
			wantChanged: true,
		},
		{
			name: "complete: True/NewReplicaSetAvailable",
			d:    base(updatedAt(t0, t0)), rss: []*appsv1.ReplicaSet{oldRS(0), newRS(3)}, newRS: newRS(3), now: t1,
			wantCond: []appsv1.DeploymentCondition{availTrue, cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable,
				`ReplicaSet "new" has successfully progressed.`, t1, t0)},
			wantChanged: true,
		},
		{
			name: "no progress, deadline passed: False/ProgressDeadlineExceeded",
			d:    base(updatedAt(t0, t0)), rss: []*appsv1.ReplicaSet{oldRS(3), newRS(1)}, newRS: newRS(1), now: t0.Add(11 * time.Minute),
			wantCond: []appsv1.DeploymentCondition{availTrue, cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded,
				`ReplicaSet "new" has timed out progressing.`, t0.Add(11*time.Minute), t0.Add(11*time.Minute))},
			wantChanged: true,
		},
		{
			name: "no progress within the deadline: unchanged, check later",
			d:    base(updatedAt(t0, t0)), rss: []*appsv1.ReplicaSet{oldRS(3), newRS(1)}, newRS: newRS(1), now: t0.Add(4 * time.Minute),
			wantCond:  []appsv1.DeploymentCondition{availTrue, updatedAt(t0, t0)},
			wantCheck: ProgressCheck{Needed: true, Remaining: 6 * time.Minute, After: 6*time.Minute + time.Second},
		},
		{
			name: "without newRS the message names the Deployment",
			d:    base(updatedAt(t0, t0)), rss: []*appsv1.ReplicaSet{oldRS(2)}, now: t1,
			wantCond: []appsv1.DeploymentCondition{
				cond(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.", t1, t1),
				cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, `Deployment "web" is progressing.`, t1, t0)},
			wantChanged: true,
		},
		{
			name: "ReplicaFailure is promoted",
			d:    base(updatedAt(t0, t0)), rss: []*appsv1.ReplicaSet{failing, newRS(1)}, newRS: newRS(1), now: t0.Add(time.Minute),
			wantCond: []appsv1.DeploymentCondition{availTrue, updatedAt(t0, t0),
				cond(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", "quota", t0, t0)},
			wantChanged: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.d.DeepCopy()
			got, err := SyncStatus(tc.d, tc.rss, tc.newRS, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantCond, got.Status.Conditions); diff != "" {
				t.Errorf("conditions mismatch (-want +got):\n%s", diff)
			}
			if got.Changed != tc.wantChanged {
				t.Errorf("Changed = %v; want %v (status %+v)", got.Changed, tc.wantChanged, got.Status)
			}
			if diff := cmp.Diff(tc.wantCheck, got.Check); diff != "" {
				t.Errorf("Check mismatch (-want +got):\n%s", diff)
			}
			unchanged(t, "deployment", before, tc.d)
		})
	}

	noDeadline := base(updatedAt(t0, t0))
	noDeadline.Spec.ProgressDeadlineSeconds = nil
	got, _ := SyncStatus(noDeadline, []*appsv1.ReplicaSet{oldRS(2), newRS(2)}, newRS(2), t1)
	if GetCondition(got.Status, appsv1.DeploymentProgressing) != nil {
		t.Error("without a deadline Progressing must be removed")
	}
}

func TestPauseCondition(t *testing.T) {
	paused := deploy(1, "1", "0")
	paused.Spec.Paused = true
	resumed := deploy(1, "1", "0")
	resumed.Status.Conditions = []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused, "Deployment is paused", t0, t0)}
	timedOut := paused.DeepCopy()
	timedOut.Status.Conditions = []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded, "x", t0, t0)}
	noDeadline := paused.DeepCopy()
	noDeadline.Spec.ProgressDeadlineSeconds = nil
	t1 := t0.Add(time.Minute)
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		want    []appsv1.DeploymentCondition
		changed bool
	}{
		{"pause", paused, []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused, "Deployment is paused", t1, t1)}, true},
		{"resume keeps the Unknown transition time", resumed, []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentResumed, "Deployment is resumed", t1, t0)}, true},
		{"timed out stays", timedOut, timedOut.Status.Conditions, false},
		{"no deadline", noDeadline, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := *tc.d.Status.DeepCopy()
			c, changed := PauseCondition(tc.d, t1)
			if changed {
				st = SetCondition(st, c)
			}
			if diff := cmp.Diff(tc.want, st.Conditions); diff != "" || changed != tc.changed {
				t.Errorf("PauseCondition changed=%v, mismatch (-want +got):\n%s", changed, diff)
			}
		})
	}
}
