package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFightDecay: a fight's evidence decays once the last flip is
// FightDecay flip periods old; until then it blocks.
func TestFightDecay(t *testing.T) {
	type verdict struct {
		State    RolloutState
		Severity Severity
		Observe  time.Duration
	}
	tests := []struct {
		name string
		// up and down are the two scaling events: count, first and last
		// (ago).
		upCount, downCount                   int32
		upFirst, upLast, downFirst, downLast time.Duration
		// wrote is when the owner of spec.replicas last wrote (ago);
		// zero: at the last event. scaled, if set, is when the
		// controller last wrote the flapping ReplicaSet's size, and
		// size that size.
		wrote, scaled time.Duration
		size          int32
		want          verdict
		text          []string
	}{
		{name: "going on: the last flip 1s ago, every 3.5s", upCount: 6, downCount: 6,
			upFirst: 40 * time.Second, upLast: 3 * time.Second, downFirst: 38 * time.Second, downLast: time.Second,
			want: verdict{Stuck, Blocking, 3 * (39 * time.Second / 11)},
			text: []string{"the last 1s ago", "it counts as over after 35s without a flip"}},
		{name: "just under 10 periods: still blocking", upCount: 6, downCount: 6,
			upFirst: 73 * time.Second, upLast: 36 * time.Second, downFirst: 71 * time.Second, downLast: 34 * time.Second,
			want: verdict{Stuck, Blocking, 3 * (39 * time.Second / 11)}, text: []string{"the last 34s ago"}},
		{name: "10 periods without a flip: over", upCount: 6, downCount: 6,
			upFirst: 79 * time.Second, upLast: 42 * time.Second, downFirst: 77 * time.Second, downLast: 40 * time.Second,
			want: verdict{Complete, Warning, 0},
			text: []string{"~ SpecFight: spec.replicas flipped 12 times within 39s (every 3.5s on average), the last 40s ago: unchanged since, for more than 10 flip periods: the fight is over",
				"; its writers: HorizontalPodAutoscaler web (replicas 2–6, wants 6); argocd-application-controller"}},
		{name: "events stopped (the recorder's spam filter), the writers go on: not over", upCount: 12, downCount: 13,
			upFirst: 130 * time.Second, upLast: 42 * time.Second, downFirst: 128 * time.Second, downLast: 40 * time.Second, wrote: time.Second,
			want: verdict{Stuck, Blocking, 3 * (90 * time.Second / 24)}, text: []string{"within 1m30s, the last 1s ago"}},
		{name: "events stopped, an autoscaler's /scale writes (no time recorded), the controller still resizing: not over", upCount: 12, downCount: 13,
			upFirst: 130 * time.Second, upLast: 42 * time.Second, downFirst: 128 * time.Second, downLast: 40 * time.Second, wrote: -1,
			scaled: time.Second, size: 6,
			want: verdict{Stuck, Blocking, 3 * (90 * time.Second / 24)}, text: []string{"within 1m30s, the last 1s ago"}},
		{name: "events stopped, the ReplicaSet resized since to another size (a later rollout): over", upCount: 12, downCount: 13,
			upFirst: 130 * time.Second, upLast: 42 * time.Second, downFirst: 128 * time.Second, downLast: 40 * time.Second, wrote: -1,
			scaled: time.Second, size: 0,
			want: verdict{Complete, Warning, 0}, text: []string{"the last 40s ago"}},
		{name: "fast flips, a second apart at least: over after 10s", upCount: 3, downCount: 3,
			upFirst: 15 * time.Second, upLast: 12 * time.Second, downFirst: 14 * time.Second, downLast: 11 * time.Second,
			want: verdict{Complete, Warning, 0}, text: []string{"flipped 6 times within 4s (every 1s on average), the last 11s ago"}},
		{name: "slow flips: over at the window's end at the latest", upCount: 2, downCount: 2,
			upFirst: 39 * time.Minute, upLast: 13 * time.Minute, downFirst: 26 * time.Minute, downLast: 9*time.Minute + 59*time.Second,
			want: verdict{Stuck, Blocking, 20 * time.Second}, text: []string{"it counts as over after 10m0s without a flip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, st := fightWorld()
			st.Events = []*corev1.Event{
				scaled(w.new.Name, true, 3, 6, tt.upCount, tt.upFirst, tt.upLast),
				scaled(w.new.Name, false, 6, 3, tt.downCount, tt.downFirst, tt.downLast),
			}
			switch {
			case tt.wrote < 0: // through /scale: no time
				w.d.ManagedFields[0] = mf("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "scale", 0, fieldsReplicas)
				w.d.ManagedFields[0].Time = nil
			case tt.wrote == 0:
				w.d.ManagedFields[0].Time = ptr(ago(min(tt.upLast, tt.downLast)))
			default:
				w.d.ManagedFields[0].Time = ptr(ago(tt.wrote))
			}
			if tt.scaled > 0 {
				w.new.Spec.Replicas = ptr(tt.size)
				w.new.ManagedFields = []metav1.ManagedFieldsEntry{mf("deployment-controller", metav1.ManagedFieldsOperationUpdate, "", tt.scaled, fieldsReplicas)}
			}
			r, text := whyText(t, st)
			got := verdict{State: r.State, Observe: ObserveFor(w.d, st.ReplicaSets, st.Events, now, 20*time.Second)}
			for _, c := range r.Causes {
				if c.Code == SpecFight {
					got.Severity = c.Severity
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s\n%s", diff, text)
			}
			if got.Severity == Warning && !strings.HasPrefix(r.Causes[0].Fix, "if it starts again: ") {
				t.Errorf("an ended fight's fix = %q; want it to say when it applies", r.Causes[0].Fix)
			}
			for _, s := range tt.text {
				if !strings.Contains(text, s) {
					t.Errorf("output lacks %q:\n%s", s, text)
				}
			}
		})
	}
}

// TestFightWriters: the writers of a fight over spec.replicas are every
// manager seen setting it (the watched updates) or owning it
// (managedFields), not the managers of other fields.
func TestFightWriters(t *testing.T) {
	noHPA := func() (*State, func(...metav1.ManagedFieldsEntry)) {
		w, st := fightWorld()
		st.Autoscalers = nil
		delete(w.d.Annotations, "argocd.argoproj.io/tracking-id")
		return st, func(e ...metav1.ManagedFieldsEntry) { w.d.ManagedFields = e }
	}
	tests := []struct {
		name   string
		build  func() *State
		want   []string
		absent []string
	}{
		{name: "both seen while watched; the template's managers are not writers", build: func() *State {
			st, fields := noHPA()
			fields(mf("scaler-a", metav1.ManagedFieldsOperationUpdate, "", time.Second, fieldsReplicas),
				mf("kubectl-set", metav1.ManagedFieldsOperationUpdate, "", 5*time.Minute, fieldsTemplate),
				mf("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "", time.Hour, `{"f:spec":{"f:template":{},"f:strategy":{}}}`))
			st.ReplicasWrites = []ReplicasWrite{{At: now.Add(-3 * time.Second), Replicas: 6, Owners: []string{"scaler-b (/scale)"}},
				{At: now.Add(-time.Second), Replicas: 3, Owners: []string{"scaler-a"}}}
			return st
		}, want: []string{"two writers disagree: scaler-b (/scale) (a second controller or a script), seen setting it to 6 (once), wrote 3s ago; " +
			"scaler-a (a second controller or a script), seen setting it to 3 (once), owns it now (replicas: 3), wrote 1s ago",
			"watched: spec.replicas set to 6 by scaler-b (/scale), 3s ago", "make one writer own the field"},
			absent: []string{"kubectl set (", "kubectl apply ("}},
		{name: "one writer known: the other is hinted at", build: func() *State {
			st, fields := noHPA()
			fields(mf("scaler-a", metav1.ManagedFieldsOperationUpdate, "", time.Second, fieldsReplicas),
				mf("kubectl-set", metav1.ManagedFieldsOperationUpdate, "", 5*time.Minute, fieldsTemplate))
			st.Deployment.Annotations[corev1.LastAppliedConfigAnnotation] = `{"spec":{"replicas":6}}`
			return st
		}, want: []string{"two writers disagree: scaler-a (a second controller or a script), owns it now (replicas: 3), wrote 1s ago, and another that left no trace",
			"the other may be kubectl apply, re-applied in a loop (its last-applied-configuration sets replicas: 6)"},
			absent: []string{"kubectl set ("}},
		{name: "an autoscaler's /scale writes are its own", build: func() *State {
			_, st := fightWorld()
			st.ReplicasWrites = []ReplicasWrite{{At: now.Add(-2 * time.Second), Replicas: 6, Owners: []string{"kube-controller-manager (/scale)"}},
				{At: now.Add(-time.Second), Replicas: 3, Owners: []string{"argocd-application-controller"}}}
			return st
		}, want: []string{"HorizontalPodAutoscaler web (replicas 2–6, wants 6), writing /scale as kube-controller-manager, seen setting it to 6 (once), wrote 2s ago; " +
			"argocd-application-controller (Argo CD, GitOps), seen setting it to 3 (once), owns it now (replicas: 3), wrote 1s ago"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, text := whyText(t, tt.build())
			wantReport(t, r, text, Stuck, []CauseCode{SpecFight}, tt.want...)
			msg := r.Causes[0].Message
			for _, s := range tt.absent {
				if strings.Contains(msg, s) {
					t.Errorf("the message names %q, which does not write spec.replicas:\n%s", s, msg)
				}
			}
		})
	}
}
