package envtest_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// child is a run of TestHelperSuite in a child process.
type child struct {
	out  string
	code int           // exit code, -1 if killed by a signal
	wall time.Duration // wall time of the child, start to exit
}

// runChild runs the helper suite's case kase in a child process (the test
// binary itself), with env added to its environment and args to its
// flags.
func runChild(t *testing.T, kase string, env []string, args ...string) child {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperSuite$", "-test.v", "-test.timeout=5m", "-ginkgo.no-color"}, args...)...)
	cmd.Env = append(append(os.Environ(), "ENVTEST_HELPER_CASE="+kase), env...)
	begin := time.Now()
	out, err := cmd.CombinedOutput()
	c := child{out: string(out), wall: time.Since(begin)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		c.code = exit.ExitCode()
	default:
		t.Fatalf("running the helper suite %q: %v", kase, err)
	}
	return c
}

// expect fails the test unless the child exited with code and said each
// of says.
func (c child) expect(t *testing.T, code int, says ...string) {
	t.Helper()
	ok := c.code == code
	for _, s := range says {
		if !strings.Contains(c.out, s) {
			t.Errorf("the helper suite did not say %q", s)
			ok = false
		}
	}
	if c.code != code {
		t.Errorf("the helper suite exited with %d; want %d", c.code, code)
	}
	if !ok {
		t.Logf("its output:\n%s", c.out)
	}
}

// TestRunSpecsRunsHoursInVirtualTime runs a suite that waits for three
// hourly reconciles, sleeps half an hour and watches for ten minutes,
// with controller-runtime's default metrics address.
func TestRunSpecsRunsHoursInVirtualTime(t *testing.T) {
	c := runChild(t, "requeue", nil, "-ginkgo.timeout=6h") // Ginkgo's timeouts are virtual too: its default of an hour is too short
	c.expect(t, 0, "Ran 3 of 3 Specs", "SUCCESS!", `after the suite: metricsserver.DefaultBindAddress ":8080"`, "of virtual time in")
	t.Logf("a suite of %s of virtual time took %v of wall time (the child process, start to exit)", virtualTime(c.out), c.wall)
	// Three hourly reconciles (the first at once), seen by a poll that
	// starts half a minute after the first and comes every minute: the
	// third is seen 2h00m30s after the first; a sleep of 30 minutes, 10
	// more of Consistently; and the requests, a millisecond or two each.
	want := 2*time.Hour + 40*time.Minute + 30*time.Second
	if d, err := time.ParseDuration(virtualTime(c.out)); err != nil || d < want || d >= want+time.Second {
		t.Errorf("the suite ran %s of virtual time; want %v and a fraction of a second", virtualTime(c.out), want)
	}
}

// virtualTime is the virtual time RunSpecs reports in out.
func virtualTime(out string) string {
	m := regexp.MustCompile(`the suite ran (\S+) of virtual time`).FindStringSubmatch(out)
	if m == nil {
		return "?"
	}
	return m[1]
}

// TestRunSpecsFailingEventuallyTakesNoWallTime runs a spec whose
// Eventually polls the cluster for two minutes and fails: a Ginkgo
// failure, at once.
func TestRunSpecsFailingEventuallyTakesNoWallTime(t *testing.T) {
	c := runChild(t, "eventually", nil)
	c.expect(t, 1, "[FAILED] Timed out after 120.000s.", "FAIL! -- 0 Passed | 1 Failed", "--- FAIL: TestHelperSuite")
	t.Logf("a spec failing after a 2-minute Eventually: the child process took %v of wall time", c.wall)
}

// TestRunSpecsNamesAListener runs a suite whose Manager serves metrics on
// a socket: the test binary ends, naming it.
func TestRunSpecsNamesAListener(t *testing.T) {
	c := runChild(t, "listener", nil)
	c.expect(t, 2, "envtest: virtual time cannot advance", "listens for connections on a real socket",
		"the Manager's metrics server; set ctrl.Options.Metrics.BindAddress")
}

// TestRunSpecsNamesALockWaiter runs a spec that waits for time while
// holding a lock another goroutine waits for (as code that holds a lock
// across a request does): the suite cannot move, and the test binary
// ends, naming the lock's waiter.
func TestRunSpecsNamesALockWaiter(t *testing.T) {
	c := runChild(t, "lock", nil)
	c.expect(t, 2, "envtest: virtual time cannot advance", "waits for a lock (sync.Mutex.Lock) in github.com/ctrlkit/ctrlkit/controllerruntime/envtest_test.waitForLock")
}

func TestRunSpecsRefusesWebhooks(t *testing.T) {
	c := runChild(t, "webhooks", nil)
	c.expect(t, 1, "[BeforeSuite] [FAILED]", "envtest: this suite has webhooks (WebhookInstallOptions), which cannot run in virtual time")
}

func TestRunSpecsRefusesParallelGinkgo(t *testing.T) {
	c := runChild(t, "requeue", nil, "-ginkgo.parallel.process=1", "-ginkgo.parallel.total=2", "-ginkgo.parallel.host=http://127.0.0.1:1")
	c.expect(t, 1, "envtest: RunSpecs runs the suite in virtual time, in one process: parallel Ginkgo (2 processes)")
}

// TestRunSpecsListsLeftovers runs a suite that leaves a goroutine running:
// it passes, and the goroutine is named.
func TestRunSpecsListsLeftovers(t *testing.T) {
	c := runChild(t, "leftover", nil)
	c.expect(t, 0, "SUCCESS!", "goroutines of the suite still running 30s after its last spec", "1× [sleep] ", "envtest_test.leftoverSpecs.func1.1")
}

// TestRunSpecsEndsOnAnInterrupt interrupts a suite stuck in a spec: the
// process ends, saying where the suite waits, instead of a fatal error of
// the runtime (a signal sent to a channel of the bubble).
func TestRunSpecsEndsOnAnInterrupt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGTERM")
	}
	c := runChild(t, "interrupt", nil)
	c.expect(t, 1, `envtest: terminated in spec "is interrupted"; the suite's goroutines wait at:`, "github.com/onsi/ginkgo/v2/internal.(*Suite).runNode")
	if strings.Contains(c.out, "synctest channel") {
		t.Errorf("the interrupt reached a channel of the bubble:\n%s", c.out)
	}
}

func TestRunSpecsOnTheWallClock(t *testing.T) {
	c := runChild(t, "wallclock", []string{"CTRLKIT_WALL_CLOCK=1"})
	c.expect(t, 0, "Ran 1 of 1 Specs", "SUCCESS!")
	if strings.Contains(c.out, "of virtual time") {
		t.Errorf("on the wall clock, RunSpecs reported virtual time:\n%s", c.out)
	}
}

// TestRunSpecsReplays runs a suite twice with the same Ginkgo seed: the
// Environment's traces (every request, write and event, with its virtual
// time) are the same.
func TestRunSpecsReplays(t *testing.T) {
	dir := t.TempDir()
	var traces []string
	for i, name := range []string{"first", "second"} {
		path := filepath.Join(dir, name)
		c := runChild(t, "requeue", []string{"ENVTEST_HELPER_TRACE=" + path}, "-ginkgo.seed=7", "-ginkgo.timeout=6h")
		c.expect(t, 0, "SUCCESS!")
		trace, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		traces = append(traces, string(trace))
	}
	if diff := cmp.Diff(traces[0], traces[1]); diff != "" {
		t.Errorf("two runs with -ginkgo.seed=7 made different traces (-first +second):\n%s", diff)
	}
	if n := strings.Count(traces[0], "\n"); n < 20 {
		t.Errorf("the trace has %d lines; want a suite's worth:\n%s", n, traces[0])
	}
}
