package clustertest

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble"
)

// A Scenario is what [Explore] runs on each bench: the test body of a
// [Test], taking a testing.TB so that Explore can tell a failure of one
// seed from a failure of the test.
type Scenario func(t testing.TB, c *Cluster)

// ExploreOptions configures [Explore].
type ExploreOptions struct {
	// Options are each bench's; Explore sets Seed, and Interleave or
	// Schedule, per run. Options.Perturb adds perturbations to the
	// reorderings ([AllPerturbations] for every one).
	Options Options
	// Seeds is how many seeds to run, from FirstSeed (default 1). Zero
	// means 100. The environment variable CLUSTERTEST_SEEDS, when set,
	// overrides it: a test explores a few seeds in the default suite, and
	// thousands before a release.
	Seeds     int
	FirstSeed uint64
	// Parallel is how many benches run at once; zero means GOMAXPROCS.
	Parallel int
	// Properties must hold on every bench (see [Property]). A failure of
	// the scenario itself (t.Error, t.Fatal, a MustRunUntil that gives
	// up) counts as the violation of a property named "scenario".
	Properties []Property
	// ShrinkRuns bounds the benches shrinking may run (zero: 200).
	ShrinkRuns int
	// Replay, if set, runs the one bench it names instead of exploring:
	// the line Explore prints, "seed=17 schedule=12:1,40:2". The
	// environment variable CLUSTERTEST_REPLAY does the same.
	Replay string
	// ExpectViolation turns the test around: Explore fails the test if
	// it finds no violation (for a test that shows a known bug is found),
	// and does not fail it for the one it finds.
	ExpectViolation bool
	// Logf, if set, receives the report instead of t.Log (tests of
	// Explore itself).
	Logf func(format string, args ...any)
}

// Violation is what [Explore] found: the first seed that broke a
// property, and the smallest schedule it shrank it to.
type Violation struct {
	Property string // the property's name
	Message  string // what it said
	Seed     uint64
	Schedule Schedule // shrunk
	Found    Schedule // as found, before shrinking
	Step     uint64   // the step after which the property failed (0 at the end)
	Replay   string   // "seed=17 schedule=12:1,40:2": ExploreOptions.Replay reruns it
	// Steps are the choices of Schedule up to the violation, one
	// readable line each: "step 12: ADDED pods default/web-1@57 to
	// kube-controller-manager (watch 3) goes ahead of create pods in
	// default by replicaset-controller".
	Steps []string
	// Trace is the bench's trace up to the violation.
	Trace    []string
	Explored int    // seeds up to and with the one that broke it
	Shrinks  int    // benches run to shrink it
	Test     string // the test's name, for the replay command
	Replayed bool   // found by a replay (ExploreOptions.Replay), not explored

	made []made // the choices of Schedule, as the bench made them
}

// Report is the violation's report, as Explore prints it.
func (v *Violation) Report() string {
	var b strings.Builder
	at := "at the end"
	if v.Step > 0 {
		at = fmt.Sprintf("after step %d", v.Step)
	}
	if v.Replayed {
		fmt.Fprintf(&b, "clustertest: property %q violated %s, replaying %s:\n    %s\n", v.Property, at, v.Replay, indent(v.Message))
	} else {
		fmt.Fprintf(&b, "clustertest: property %q violated %s, seed %d (found after %d seeds):\n    %s\n", v.Property, at, v.Seed, v.Explored, indent(v.Message))
		fmt.Fprintf(&b, "shrunk from %d choices (reorderings, perturbations) to %d in %d runs; replay it with\n    CLUSTERTEST_REPLAY=%q go test -run '^%s$'\nor ExploreOptions{Replay: %q}\n",
			len(v.Found), len(v.Schedule), v.Shrinks, v.Replay, cmp.Or(v.Test, "<the test>"), v.Replay)
	}
	if len(v.Steps) == 0 {
		b.WriteString("the canonical order breaks it (no reordering needed)\n")
	} else {
		b.WriteString("the steps that matter (where the order differs from the canonical one):\n")
		for _, s := range v.Steps {
			b.WriteString("    " + s + "\n")
		}
	}
	const tail = 40
	from := max(0, len(v.Trace)-tail)
	fmt.Fprintf(&b, "the trace up to the violation (the last %d of %d lines):\n", len(v.Trace)-from, len(v.Trace))
	for _, l := range v.Trace[from:] {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

// ReplayText is the replay line of a seed and schedule.
func ReplayText(seed uint64, s Schedule) string {
	return fmt.Sprintf("seed=%d schedule=%s", seed, s)
}

// ParseReplay reads a replay line, as [ReplayText] writes it.
func ParseReplay(text string) (seed uint64, s Schedule, err error) {
	fields := strings.Fields(text)
	if len(fields) == 0 || len(fields) > 2 {
		return 0, nil, fmt.Errorf("clustertest: replay %q: want \"seed=N schedule=S\"", text)
	}
	v, ok := strings.CutPrefix(fields[0], "seed=")
	if !ok {
		return 0, nil, fmt.Errorf("clustertest: replay %q: no seed=", text)
	}
	if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
		return 0, nil, fmt.Errorf("clustertest: replay %q: seed %q is not a number", text, v)
	}
	if len(fields) == 2 {
		v, ok := strings.CutPrefix(fields[1], "schedule=")
		if !ok {
			return 0, nil, fmt.Errorf("clustertest: replay %q: no schedule=", text)
		}
		if s, err = ParseSchedule(v); err != nil {
			return 0, nil, err
		}
	}
	return seed, s, nil
}

// Explore runs scenario on many benches, one per seed, each with the
// seed choosing the order of the steps ready at each instant
// ([Options.Interleave]) as well as what it chooses already (faults, the
// kubelet's timing, names), several at once. It checks the properties at
// every step, stops at the first seed that breaks one, shrinks that
// bench's schedule to the fewest departures from the canonical order
// that still break the same property, and fails the test with a report:
// the property and its message, a replay line, the steps that matter and
// the trace up to the violation. It returns the violation, or nil.
//
// Every bench is independent: its own cluster, in its own synctest
// bubble. The seeds are run in order, several at a time; the violation
// reported is the one of the lowest seed that breaks a property, so that
// the report does not depend on how the benches happened to run.
//
// With Replay set (or CLUSTERTEST_REPLAY), Explore runs that one bench
// and fails the test if it breaks a property.
func Explore(t *testing.T, opts ExploreOptions, scenario Scenario) *Violation {
	t.Helper()
	logf := opts.Logf
	if logf == nil {
		logf = t.Logf
	}
	// See Test: controller-runtime's logger fallback is asked on the wall
	// clock, outside any bubble.
	ctrllog.Log.Enabled()
	opts.Options.shared = newShared() // for every bench of this exploration
	replay := opts.Replay
	if r := os.Getenv("CLUSTERTEST_REPLAY"); r != "" && replay == "" {
		replay = r
	}
	var v *Violation
	if replay != "" {
		seed, s, err := ParseReplay(replay)
		if err != nil {
			t.Fatal(err)
		}
		out := runBench(t, opts, scenario, seed, s, nil, true)
		if out.violation != nil {
			v = out.violation
			v.Found, v.Schedule, v.Replayed = s, s, true
			finish(v)
		}
	} else {
		v = explore(t, opts, scenario)
	}
	if v != nil {
		v.Test = t.Name()
	}
	switch {
	case v == nil && opts.ExpectViolation:
		t.Errorf("clustertest: no property violated (%s)", exploredText(opts, replay))
	case v == nil:
		logf("clustertest: no property violated (%s)", exploredText(opts, replay))
	case opts.ExpectViolation:
		logf("%s", v.Report())
	default:
		t.Error(v.Report())
	}
	return v
}

func exploredText(opts ExploreOptions, replay string) string {
	if replay != "" {
		return "replay " + replay
	}
	return fmt.Sprintf("%d seeds from %d, perturbations: %v", seedCount(opts), firstSeed(opts), opts.Options.Perturb)
}

func seedCount(opts ExploreOptions) int {
	if n, err := strconv.Atoi(os.Getenv("CLUSTERTEST_SEEDS")); err == nil && n > 0 {
		return n
	}
	if opts.Seeds > 0 {
		return opts.Seeds
	}
	return 100
}

func firstSeed(opts ExploreOptions) uint64 { return max(opts.FirstSeed, 1) }

// explore runs the seeds and shrinks the first violation.
func explore(t *testing.T, opts ExploreOptions, scenario Scenario) *Violation {
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	n, first := seedCount(opts), firstSeed(opts)
	type result struct {
		seed uint64
		out  outcome
	}
	var (
		mu      sync.Mutex
		found   bool
		results []result
		next    = first
		wg      sync.WaitGroup
	)
	for range parallel {
		wg.Go(func() {
			for {
				mu.Lock()
				if found || next >= first+uint64(n) {
					mu.Unlock()
					return
				}
				seed := next
				next++
				mu.Unlock()
				out := runBench(t, opts, scenario, seed, nil, nil, false)
				mu.Lock()
				results = append(results, result{seed, out})
				if out.violation != nil {
					found = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var lowest *result
	for i := range results {
		if r := &results[i]; r.out.violation != nil && (lowest == nil || r.seed < lowest.seed) {
			lowest = r
		}
	}
	if lowest == nil {
		return nil
	}
	v := lowest.out.violation
	v.Explored = int(lowest.seed - first + 1)
	v.Found = lowest.out.schedule
	return shrink(t, opts, scenario, v)
}

// ownConflict says, for the failure of a scenario, that PerturbConflict
// beat one of the test's own writes (Options.PerturbTestClient), if it
// did: the 409 it got is what failed it, most likely.
func ownConflict(ms []made) string {
	for _, m := range ms {
		if m.Perturb == PerturbConflict && testsOwn(m.client) {
			return fmt.Sprintf("\n(step %d: PerturbConflict had %s change %s %s just before the test's own %s, which a real API server answers 409 Conflict: "+
				"with Options.PerturbTestClient on, the test retries its writes on a conflict as a user would, with k8s.io/client-go/util/retry.RetryOnConflict)",
				m.Step, otherWriter, m.step.Resource, objectText(m.step.Namespace, m.step.Name), m.chose)
		}
	}
	return ""
}

func finish(v *Violation) *Violation {
	v.Replay = ReplayText(v.Seed, v.Schedule)
	return v
}

// outcome is what one bench of Explore gave.
type outcome struct {
	violation *Violation // nil: every property held
	schedule  Schedule   // the choices it made
	made      []made     // and what they acted on
}

// runBench runs one bench: seed with schedule s or, if not nil, the
// choices of guide to follow (replay), or its own interleaving (explore).
func runBench(t *testing.T, opts ExploreOptions, scenario Scenario, seed uint64, s Schedule, guide []guided, replay bool) (out outcome) {
	bopts := opts.Options
	bopts.Seed = seed
	bopts.Concurrent = false
	if replay {
		bopts.Interleave, bopts.Schedule, bopts.guide = false, s.String(), guide
	} else {
		bopts.Interleave, bopts.Schedule = true, ""
	}
	var p *probe
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				err, ok := r.(error)
				if !ok || !strings.HasPrefix(err.Error(), "deadlock: ") {
					panic(r)
				}
				if p != nil {
					p.record("scenario", 0, fmt.Sprintf("the bench deadlocked (testing/synctest: %v)", r), nil)
				}
			}
		}()
		synctest.Test(t, func(st *testing.T) {
			p = &probe{TB: st, main: bubble.Self()}
			seedGlobal(seed)
			checker := &checker{p: p, props: opts.Properties}
			for _, prop := range opts.Properties {
				if prop.needsBasis {
					checker.seen = basis{}
				}
			}
			bopts.onWrite = checker.wrote
			c, err := start(p, bopts, true)
			if err != nil {
				p.record("scenario", 0, err.Error(), nil)
				return
			}
			p.c = c
			checker.attach(c)
			p.run(func() { scenario(p, c) })
			p.runCleanups()
			if p.violation == nil {
				p.run(checker.atEnd)
			}
			// Stop the cluster; what it reports (goroutines left behind, a
			// Manager's error) is a failure of the scenario.
			c.stop()
			out.schedule, out.made = c.Schedule(), c.made()
			if v := p.violation; v != nil {
				v.Seed = seed
				if v.Property == "scenario" {
					v.Message += ownConflict(out.made)
				}
				for _, r := range c.reorderings() {
					if v.Step == 0 || r.step <= v.Step {
						v.Steps = append(v.Steps, r.text)
					}
				}
			}
		})
	}()
	<-done
	if p == nil {
		out.violation = &Violation{Property: "scenario", Message: "the bench did not start", Seed: seed}
		return out
	}
	out.violation = p.violation
	return out
}
