package e2e

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/testhooks"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// captured is what a run under a capturing TB did: its log lines (the
// replay line among them), and whether it failed.
type captured struct {
	logs   []string
	errors []string
	failed bool
}

// captureTB is a testing.TB that records a run's failure instead of
// failing the test: a test can then show that a failing run replays. It
// runs the cleanups it is given when the run ends, as testing does.
type captureTB struct {
	testing.TB // the test's, for what is not recorded (TempDir, Context)
	name       string

	mu       sync.Mutex
	out      captured
	cleanups []func()
}

// capture runs body under a captureTB named name.
func capture(t *testing.T, name string, body func(tb testing.TB)) captured {
	t.Helper()
	c := &captureTB{TB: t, name: name}
	run := func(f func()) {
		done := make(chan struct{})
		go func() { // Fatal ends it with runtime.Goexit, as testing's
			defer close(done)
			f()
		}()
		<-done
	}
	run(func() { body(c) })
	for {
		c.mu.Lock()
		n := len(c.cleanups)
		if n == 0 {
			c.mu.Unlock()
			break
		}
		f := c.cleanups[n-1]
		c.cleanups = c.cleanups[:n-1]
		c.mu.Unlock()
		run(f)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out
}

func (c *captureTB) Name() string { return c.name }
func (c *captureTB) Helper()      {}
func (c *captureTB) Cleanup(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanups = append(c.cleanups, f)
}
func (c *captureTB) Log(args ...any)                 { c.log(false, fmt.Sprint(args...)) }
func (c *captureTB) Logf(format string, args ...any) { c.log(false, fmt.Sprintf(format, args...)) }
func (c *captureTB) Error(args ...any)               { c.log(true, fmt.Sprint(args...)) }
func (c *captureTB) Errorf(format string, args ...any) {
	c.log(true, fmt.Sprintf(format, args...))
}
func (c *captureTB) Fatal(args ...any) { c.log(true, fmt.Sprint(args...)); runtime.Goexit() }
func (c *captureTB) Fatalf(format string, args ...any) {
	c.log(true, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (c *captureTB) Fail()    { c.log(true, "") }
func (c *captureTB) FailNow() { c.Fail(); runtime.Goexit() }
func (c *captureTB) Failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.failed
}

func (c *captureTB) log(fail bool, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.logs = append(c.out.logs, line)
	if fail {
		c.out.failed = true
		if line != "" {
			c.out.errors = append(c.out.errors, line)
		}
	}
}

// envOf reads the environment variables a replay line sets ("replay
// with: A=1 B=@f go test ...").
func envOf(line string) map[string]string {
	env := map[string]string{}
	for _, f := range strings.Fields(strings.TrimPrefix(line, "replay with:")) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k != strings.ToUpper(k) {
			break
		}
		env[k] = v
	}
	return env
}

// A failure of an interleaved world replays exactly from the line it
// prints. The failure is planted: the ReplicaSet controller stops
// expecting a pod deletion that failed ambiguously at once, as upstream
// does (testhooks.LowerFailedDeletes turns ctrlkit's fix off), and every
// pod deletion happens but answers an error, and the live read that would
// settle it fails too. In the oldest-first order the pod informer
// delivers all the deletions of a sync before the sync they trigger runs;
// in some interleavings that sync runs after the first delivery, finds
// the other pods still active and expected by nobody, and deletes more
// pods than the scale-down asked for. The interleavings drawn from a few
// seeds find such an order; the run's replay line, and the schedule it
// recorded, make it happen again, with the same failure and the same
// history.
func TestInterleavedFailureReplays(t *testing.T) {
	testhooks.LowerFailedDeletes.Store(true)
	t.Cleanup(func() { testhooks.LowerFailedDeletes.Store(false) })
	const name = "TestRandomised/seed=0" // any name: the line's -run pattern
	faults := memcluster.Faults{Rules: []memcluster.FaultRule{
		{Verb: "delete", Resource: "pods", Rate: 1, Reason: metav1.StatusReasonInternalError, AfterWrite: true},
		{Verb: "get", Resource: "pods", Rate: 1, Reason: metav1.StatusReasonInternalError},
	}}
	dir := t.TempDir() // where the failed runs write their interleavings
	scenario := func(mode clockMode) func(tb testing.TB) {
		return func(tb testing.TB) {
			w := newWorld(tb, worldConfig{Seed: 1, Mode: mode, Faults: faults, ScheduleDir: dir})
			w.create(newDeployment("web", 10, "app:1"))
			w.converge(limit)
			w.scale("web", 2)
			w.converge(limit)
			var b strings.Builder
			for _, r := range w.rec.history() {
				m := r.obj.(metav1.Object)
				fmt.Fprintf(&b, "\n%d %s %T %s", r.rv, r.typ, r.obj, m.GetName())
			}
			tb.Logf("history: ended at +%v:%s", w.now(), b.String())
		}
	}
	if got := capture(t, name, scenario(clockMode{kind: serial})); got.failed {
		t.Fatalf("the oldest-first order fails too: the failure is not the interleaving's:\n%s", strings.Join(got.errors, "\n"))
	}
	var failed captured
	var seed uint64
	for seed = 1; seed <= 300 && !failed.failed; seed++ {
		failed = capture(t, name, scenario(clockMode{kind: interleaved, seed: seed, seeded: true}))
	}
	if !failed.failed {
		t.Fatal("no interleaving of seeds 1-300 broke the planted race")
	}
	t.Logf("interleaving seed %d fails: %s", seed-1, failed.errors[0])
	var line, record string
	for _, l := range failed.logs {
		if strings.HasPrefix(l, "replay with: ") {
			line, _, _ = strings.Cut(l, "\n")
			_, record, _ = strings.Cut(l, "\n")
		}
	}
	if line == "" {
		t.Fatalf("the failed run printed no replay line; its log:\n%s", strings.Join(failed.logs, "\n"))
	}
	t.Logf("%s\n%s", line, record)
	replay := func(env map[string]string) {
		t.Helper()
		mode, err := modeFromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		got := capture(t, name, scenario(mode))
		if !got.failed {
			t.Fatalf("the replay (%v) passed", env)
		}
		if diff := cmp.Diff(failed.errors, got.errors); diff != "" {
			t.Errorf("the replay (%v) failed otherwise (-recorded +replayed):\n%s", env, diff)
		}
		if diff := cmp.Diff(histories(failed.logs), histories(got.logs)); diff != "" {
			t.Errorf("the replay (%v) has another history (-recorded +replayed):\n%s", env, diff)
		}
	}
	replay(envOf(line))
	// The record names a file: CTRLKIT_E2E_SCHEDULE=@<file>.
	i := strings.Index(record, envSchedule+"=@")
	if i < 0 {
		t.Fatalf("the failure names no recorded schedule: %q", record)
	}
	k, v, _ := strings.Cut(strings.Fields(record[i:])[0], "=")
	replay(map[string]string{k: v})
}

// histories returns the log lines that describe a run's history.
func histories(logs []string) []string {
	var out []string
	for _, l := range logs {
		if strings.HasPrefix(l, "history: ") {
			out = append(out, l)
		}
	}
	return out
}
