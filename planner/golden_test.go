package planner_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/internal/golden"
	"github.com/ctrlkit/ctrlkit/planner"
)

var update = flag.Bool("update", false, "rewrite testdata/*.txt")

// goldenCase is one standard rollout. Every case starts from a complete
// rollout of image web:1 (one ReplicaSet, revision 1) and rolls to web:2.
// Unless a case says otherwise pods are Ready 10s after creation and stop
// 5s after deletion.
type goldenCase struct {
	name    string
	d       *appsv1.Deployment
	model   planner.PodModel
	opts    planner.Options
	initial bool // start from nothing instead of web:1
}

func goldenCases() []goldenCase {
	steady := planner.PodModel{ReadyAfter: 10 * time.Second, Shutdown: 5 * time.Second}
	recreate := web(10, "web:2", nil, nil)
	recreate.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	v3 := web(10, "web:3", nil, nil).Spec.Template
	return []goldenCase{
		// D=10, 25%/25%: surge = ceil(2.5) = 3, unavailable = floor(2.5) = 2,
		// so at most 13 pods and at least 8 available.
		//   step 1 (+0s): new RS created at 13−10 = 3; in the same sync the
		//     old one drops by 13 − 8 − 3 unavailable new = 2, to 8.
		//   step 2: Σ spec = 11 < 13, so new grows by min(13−11, 10−3) = 2 → 5.
		//   +10s: 5 new available, available = 8+5 = 13 → old drops by
		//     13−8 = 5 → 3, then new grows by min(13−8, 10−5) = 5 → 10.
		//   +20s: all new available → old 3→0; complete after 20s.
		{name: "rolling_25_25", d: web(10, "web:2", pct("25%"), pct("25%")), model: steady},
		// D=10, maxSurge=3, maxUnavailable=2 as integers (the same bounds as
		// 25%/25%), with readiness jitter: pods become ready one by one.
		//   step 1: new 0→3 and old 10→8, as above (13 max, 8 min).
		//   step 2: new 3→5 (Σ spec 11 → 13).
		{name: "rolling_3_2_jitter", d: web(10, "web:2", num(3), num(2)),
			model: planner.PodModel{ReadyAfter: 5 * time.Second, ReadyJitter: 10 * time.Second, Shutdown: 5 * time.Second},
			opts:  planner.Options{Seed: 7}},
		// D=10, maxSurge=0, maxUnavailable=25% → (0, 2): never more than 10
		// pods, at least 8 available.
		//   step 1: new RS created at 10−10 = 0; old drops 10−8−0 = 2 → 8.
		//   step 2: Σ spec 8 < 10 → new grows by 2 → 2.
		//   +10s: 10 available → old 8→6 (10−8 = 2 may go), new 2→4; …
		//   five batches of 2, complete after 50s.
		{name: "rolling_surge0", d: web(10, "web:2", num(0), pct("25%")), model: steady},
		// Recreate: old 10→0 first; the new RS is created only when every
		// old pod is gone (5s of shutdown), at 10; complete 10s later (+15s).
		{name: "recreate", d: recreate, model: steady},
		// D=1 with 25%/25%: surge = ceil(0.25) = 1, unavailable = floor = 0:
		// new 0→1 (2 pods), old stays until the new pod is available at
		// +10s, then 1→0. Complete after 10s.
		{name: "one_replica", d: web(1, "web:2", pct("25%"), pct("25%")), model: steady},
		// D=100, 10%/0: surge 10, unavailable 0: batches of 10 new pods,
		// each waiting 10s; old shrinks by 10 per batch. Complete after 100s.
		//   step 1: new RS at 110−100 = 10; old cannot drop (110−100−10 = 0).
		{name: "rolling_100_10_0", d: web(100, "web:2", pct("10%"), num(0)), model: steady},
		// Rollover: web:3 pushed at +5s, while web:2 has 5 unavailable pods.
		// The web:2 ReplicaSet becomes old; its unavailable pods are cleaned
		// up first (cleanupUnhealthyReplicas), and web:3 starts at revision 3.
		{name: "rollover", d: web(10, "web:2", pct("25%"), pct("25%")), model: steady,
			opts: planner.Options{Changes: []planner.Change{{At: 5 * time.Second, Template: &v3}}}},
		// Scale 10→20 at +5s: proportional scaling (old 8, new 5 of 13 =
		// 10+3) to 20+5 = 25: old 8×25/13 = 15.4 → 15, new 5×25/13 = 9.6 →
		// 10 (shares go out largest first; 7 + 5 = 12 = 25 − 13, nothing
		// left over).
		{name: "scale_mid_rollout", d: web(10, "web:2", pct("25%"), pct("25%")), model: steady,
			opts: planner.Options{Changes: []planner.Change{{At: 5 * time.Second, Replicas: ptr[int32](20)}}}},
		// A new Deployment: the first ReplicaSet goes straight to D.
		{name: "initial", d: web(10, "web:2", pct("25%"), pct("25%")), model: steady, initial: true},
		// 40% of new pods crash-loop: the rollout stalls on minAvailable and
		// the progress deadline (600s) expires.
		{name: "stalled_crashloop", d: web(10, "web:2", pct("25%"), pct("25%")),
			model: planner.PodModel{ReadyAfter: 10 * time.Second, CrashLoop: 0.4, Shutdown: 5 * time.Second},
			opts:  planner.Options{Seed: 3, Horizon: 15 * time.Minute}},
		// A ResourceQuota of 4 pods, D=3, 2/0: of the 2 surge pods the
		// quota admits 1 (3 old + 1), the other is refused (FailedCreate).
		// Each new pod available lets the old ReplicaSet drop by one, and
		// the pod it deletes frees room once it is gone (5s later): the
		// refused creation then succeeds. Slowed, not stuck: complete
		// after 3 × (10s ready + 5s shutdown) − 5s = 40s, never more than
		// 4 pods (terminating ones included: they count until gone).
		{name: "quota_slowed", d: web(3, "web:2", num(2), num(0)), model: steady,
			opts: planner.Options{Quotas: []planner.Quota{podQuota(4)}}},
		// A quota of 3 pods, D=3, 1/0: the surge pod is refused and the
		// old ReplicaSet cannot drop (maxUnavailable 0): no step is
		// possible, the rollout stalls.
		{name: "quota_blocked", d: web(3, "web:2", num(1), num(0)), model: steady,
			opts: planner.Options{Quotas: []planner.Quota{podQuota(3)}, Horizon: 5 * time.Minute}},
	}
}

func plan(t *testing.T, c goldenCase) planner.Timeline {
	t.Helper()
	var current []*appsv1.ReplicaSet
	if !c.initial {
		current = previous(t, c.d, "web:1")
	}
	tl, err := planner.Simulate(c.d, current, c.model, c.opts)
	if err != nil {
		t.Fatalf("Simulate(%s) error: %v", c.name, err)
	}
	return tl
}

func TestGoldenTimelines(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			tl := plan(t, c)
			var b strings.Builder
			fmt.Fprintf(&b, "%s\n", c.name)
			tl.WriteTable(&b)
			violations := planner.Check(tl.Trace(), c.d)
			for _, v := range violations {
				t.Errorf("Check: %v", v)
			}
			fmt.Fprintf(&b, "check: %d violations\n", len(violations))
			golden.Check(t, "testdata/"+c.name+".txt", b.String(), *update)
		})
	}
}

func TestPlanDeterministic(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			a, b := plan(t, c).String(), plan(t, c).String()
			if a != b {
				t.Errorf("two plans with seed %d differ:\n%s", c.opts.Seed, golden.Diff(a, b))
			}
		})
	}
}
