package clustertest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// rollout runs the operator on three Apps, rolls them to a new image and
// returns the trace and the schedule the bench followed.
func rollout(t *testing.T, opts clustertest.Options) (trace []string, schedule clustertest.Schedule) {
	t.Helper()
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		startOperator(t, c)
		c.Advance(time.Second)
		for i := range 3 {
			if err := c.Client().Create(t.Context(), newApp(fmt.Sprintf("app-%d", i), "nginx:1", 3)); err != nil {
				t.Fatal(err)
			}
		}
		c.MustRunUntil("apps ready", appsReady(t, c, 3), time.Hour)
		if err := c.Check(); err != nil {
			t.Error(err)
		}
		trace, schedule = c.Trace(), c.Schedule()
	})
	return trace, schedule
}

func TestInterleaveSameSeedSameTrace(t *testing.T) {
	opts := benchOptions(t, 11)
	opts.Interleave = true
	first, sched := rollout(t, opts)
	if len(sched) == 0 {
		t.Fatal("an interleaved bench made no choice other than the canonical one")
	}
	for run := range 2 {
		again, sched2 := rollout(t, opts)
		if !slices.Equal(first, again) {
			t.Fatalf("run %d: the trace differs %s", run+2, firstDifference(first, again))
		}
		if sched.String() != sched2.String() {
			t.Fatalf("run %d: schedule %q, first %q", run+2, sched2, sched)
		}
	}
}

func TestInterleaveChangesTheOrder(t *testing.T) {
	schedules := map[string]uint64{}
	for seed := uint64(1); seed <= 3; seed++ {
		canonical, none := rollout(t, benchOptions(t, seed))
		if len(none) != 0 {
			t.Fatalf("seed %d: the canonical order made choices: %v", seed, none)
		}
		opts := benchOptions(t, seed)
		opts.Interleave = true
		trace, sched := rollout(t, opts)
		if len(sched) == 0 {
			t.Errorf("seed %d: no choice other than the canonical one", seed)
		}
		if prev, ok := schedules[sched.String()]; ok {
			t.Errorf("seeds %d and %d made the same choices %q", prev, seed, sched)
		}
		schedules[sched.String()] = seed
		if slices.Equal(trace, canonical) {
			t.Errorf("seed %d: the interleaved trace is the canonical one, after %d choices", seed, len(sched))
		}
	}
}

func TestScheduleReplaysExactly(t *testing.T) {
	opts := benchOptions(t, 5)
	opts.Interleave = true
	first, sched := rollout(t, opts)
	replay := benchOptions(t, 5)
	replay.Schedule = sched.String()
	again, sched2 := rollout(t, replay)
	if !slices.Equal(first, again) {
		t.Fatalf("the replay of %q differs %s", sched, firstDifference(first, again))
	}
	if sched.String() != sched2.String() {
		t.Fatalf("the replay made the choices %q, the run %q", sched2, sched)
	}
}

func TestParseSchedule(t *testing.T) {
	s, err := clustertest.ParseSchedule("12:1, 40:3")
	if err != nil {
		t.Fatal(err)
	}
	if want := (clustertest.Schedule{{Step: 12, Index: 1}, {Step: 40, Index: 3}}); !slices.Equal(s, want) {
		t.Fatalf("got %v, want %v", s, want)
	}
	if s.String() != "12:1,40:3" {
		t.Fatalf("String: %q", s)
	}
	for _, bad := range []string{"12", "x:1", "0:1", "3:0", "3:-1", "5:1,4:1", "5:1,5:2"} {
		if _, err := clustertest.ParseSchedule(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestPerturbationsReplayExactly: with Perturb, the seed holds watches
// back and closes them; the operator still rolls out, the trace says so,
// and the schedule replays the run exactly.
func TestPerturbationsReplayExactly(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		opts := benchOptions(t, seed)
		opts.Interleave, opts.Perturb = true, clustertest.AllPerturbations
		trace, sched := rollout(t, opts)
		var lag, closed bool
		for _, c := range sched {
			lag = lag || c.Perturb == clustertest.PerturbLag
			closed = closed || c.Perturb == clustertest.PerturbWatchClose
		}
		if !lag || !closed {
			continue
		}
		joined := strings.Join(trace, "\n")
		for _, want := range []string{"held back", "closed (explored)"} {
			if !strings.Contains(joined, want) {
				t.Errorf("seed %d, schedule %q: the trace does not say %q", seed, sched, want)
			}
		}
		replay := benchOptions(t, seed)
		replay.Schedule = sched.String()
		again, sched2 := rollout(t, replay)
		if !slices.Equal(trace, again) {
			t.Fatalf("seed %d: the replay of %q differs %s", seed, sched, firstDifference(trace, again))
		}
		if sched.String() != sched2.String() {
			t.Fatalf("seed %d: the replay made the choices %q, the run %q", seed, sched2, sched)
		}
		t.Logf("seed %d: %d choices, replayed: %s", seed, len(sched), sched)
		return
	}
	t.Fatal("no seed of 20 both held a watch back and closed one")
}

func TestParseSchedulePerturbations(t *testing.T) {
	s, err := clustertest.ParseSchedule("7:lag0=2s,7:lag3=50ms,7:restart0,7:2,9:close1")
	if err != nil {
		t.Fatal(err)
	}
	want := clustertest.Schedule{
		{Step: 7, Index: 0, Perturb: clustertest.PerturbLag, Lag: 2 * time.Second},
		{Step: 7, Index: 3, Perturb: clustertest.PerturbLag, Lag: 50 * time.Millisecond},
		{Step: 7, Index: 0, Perturb: clustertest.PerturbRestart},
		{Step: 7, Index: 2},
		{Step: 9, Index: 1, Perturb: clustertest.PerturbWatchClose},
	}
	if !slices.Equal(s, want) {
		t.Fatalf("got %v, want %v", s, want)
	}
	if s.String() != "7:lag0=2s,7:lag3=50ms,7:restart0,7:2,9:close1" {
		t.Fatalf("String: %q", s)
	}
	for _, bad := range []string{"7:lag1", "7:lag1=x", "7:lag1=-1s", "7:closex", "7:restart", "7:1,7:2", "7:close1,7:1"} {
		if _, err := clustertest.ParseSchedule(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestRestartReplays: with PerturbRestart the seed restarts the
// operator's Manager (StartRestartable) mid-scenario; the operator still
// gets its Apps ready, and the schedule replays the run exactly up to the
// restart. (After it, the restarted Manager's informers hand it the
// objects they list in the random order of a map: see the package doc.)
func TestRestartReplays(t *testing.T) {
	run := func(opts clustertest.Options) (trace []string, sched clustertest.Schedule) {
		clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
			c.StartRestartable(func() (manager.Runnable, error) {
				mgr := c.NewManager(ctrl.Options{})
				r := &appReconciler{Client: mgr.GetClient(), now: c.Now}
				return mgr, ctrl.NewControllerManagedBy(mgr).For(&App{}).Owns(&appsv1.Deployment{}).Complete(r)
			})
			c.Advance(time.Second)
			for i := range 3 {
				if err := c.Client().Create(t.Context(), newApp(fmt.Sprintf("app-%d", i), "nginx:1", 3)); err != nil {
					t.Fatal(err)
				}
			}
			c.MustRunUntil("apps ready", appsReady(t, c, 3), time.Hour)
			trace, sched = c.Trace(), c.Schedule()
		})
		return trace, sched
	}
	for seed := uint64(1); seed <= 40; seed++ {
		opts := benchOptions(t, seed)
		opts.Interleave, opts.Perturb = true, clustertest.PerturbRestart
		trace, sched := run(opts)
		if !strings.Contains(sched.String(), "restart0") {
			continue
		}
		if !strings.Contains(strings.Join(trace, "\n"), "restart of restartable 0 (explored)") {
			t.Errorf("seed %d, schedule %q: the trace does not show the restart", seed, sched)
		}
		replay := benchOptions(t, seed)
		replay.Schedule = sched.String()
		again, _ := run(replay)
		upTo := slices.IndexFunc(trace, func(l string) bool { return strings.Contains(l, "restart of restartable 0") })
		if upTo < 0 || len(again) <= upTo || !slices.Equal(trace[:upTo+1], again[:upTo+1]) {
			t.Fatalf("seed %d: the replay of %q differs before the restart %s", seed, sched, firstDifference(trace, again))
		}
		t.Logf("seed %d restarted the operator: %s", seed, sched)
		return
	}
	t.Fatal("no seed of 40 restarted the operator")
}

func TestParseScheduleNewChoices(t *testing.T) {
	text := "3:pick2@app#4,7:conflict1,7:handover0=20s,7:pick1@my-ctrl#12,7:relist2,9:1"
	s, err := clustertest.ParseSchedule(text)
	if err != nil {
		t.Fatal(err)
	}
	want := clustertest.Schedule{
		{Step: 3, Index: 2, Queue: "app", Pop: 4},
		{Step: 7, Index: 1, Perturb: clustertest.PerturbConflict},
		{Step: 7, Index: 0, Perturb: clustertest.PerturbHandover, Lag: 20 * time.Second},
		{Step: 7, Index: 1, Queue: "my-ctrl", Pop: 12},
		{Step: 7, Index: 2, Perturb: clustertest.PerturbRelist},
		{Step: 9, Index: 1},
	}
	if !slices.Equal(s, want) {
		t.Fatalf("got %v, want %v", s, want)
	}
	if s.String() != text {
		t.Fatalf("String: %q", s)
	}
	if r := clustertest.ReplayText(4, s); r != "seed=4 schedule="+text {
		t.Fatalf("ReplayText: %q", r)
	}
	for _, bad := range []string{"7:relist", "7:relist1,7:1", "7:conflictx", "7:handover0", "7:handover0=x", "7:pick1", "7:pick1@app",
		"7:pick1@app#0", "7:pickx@app#1", "7:pick1@#1"} {
		if _, err := clustertest.ParseSchedule(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
