package clustertest_test

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// The tests of this file check that process-wide state does not trap a
// bench, and that a bench that cannot end fails its test, not the binary.

// TestHandleErrorDoesNotStallVirtualTime: apimachinery's HandleError,
// which client-go's workers and informers call on every error, rate-limits
// itself with a clock read when the process started; in a bubble it would
// sleep about 26 virtual years.
func TestHandleErrorDoesNotStallVirtualTime(t *testing.T) {
	clustertest.Test(t, clustertest.Options{}, func(t *testing.T, c *clustertest.Cluster) {
		for range 3 {
			utilruntime.HandleError(errors.New("clustertest: an error a controller could not return"))
		}
		c.Advance(time.Second)
		if c.Now() != time.Second {
			t.Errorf("after three errors and a second, the bench is at +%v, want +1s", c.Now())
		}
	})
}

// The children: tests that must fail, run by
// TestABenchThatCannotEndFailsItsTestNotTheBinary in a child process.

func trapChild(t *testing.T) {
	if os.Getenv("CLUSTERTEST_TRAPS") == "" {
		t.Skip("run by TestABenchThatCannotEndFailsItsTestNotTheBinary in a child process")
	}
}

// TestLeftBehindChild leaves a goroutine blocked for ever.
func TestLeftBehindChild(t *testing.T) {
	trapChild(t)
	clustertest.Test(t, clustertest.Options{}, func(t *testing.T, c *clustertest.Cluster) {
		never := make(chan struct{})
		go waitForever(never)
		c.Advance(time.Second)
	})
}

func waitForever(ch chan struct{}) { <-ch }

// TestDeadlockChild blocks the test itself for ever, with nothing else
// that could move time: every goroutine of the bubble is blocked.
func TestDeadlockChild(t *testing.T) {
	trapChild(t)
	clustertest.Test(t, clustertest.Options{Disable: clustertest.AllControllers}, func(t *testing.T, c *clustertest.Cluster) {
		waitForever(make(chan struct{}))
	})
}

// TestSurvivorChild runs after the others: the binary is still alive.
func TestSurvivorChild(t *testing.T) {
	trapChild(t)
	clustertest.Test(t, clustertest.Options{}, func(t *testing.T, c *clustertest.Cluster) {
		c.Advance(time.Minute)
	})
}

func TestABenchThatCannotEndFailsItsTestNotTheBinary(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^(TestLeftBehindChild|TestDeadlockChild|TestSurvivorChild)$", "-test.v", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), "CLUSTERTEST_TRAPS=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the child ended with %v, want exit status 1 (tests failed):\n%s", err, tail(out))
	}
	text := string(out)
	for _, dead := range []string{"panic: ", "fatal error: "} {
		if strings.Contains(text, dead) {
			t.Fatalf("the child's output has %q:\n%s", dead, tail(out))
		}
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`--- FAIL: TestLeftBehindChild `),
		regexp.MustCompile(`clustertest: goroutines still running 30s after the cluster stopped .*; they wait at:\n\s+1× \[chan receive\] github.com/ctrlkit/ctrlkit/controllerruntime/clustertest_test.waitForever \(traps_test.go:\d+\)`),
		regexp.MustCompile(`--- FAIL: TestDeadlockChild `),
		regexp.MustCompile(`clustertest: the test deadlocked \(testing/synctest: deadlock: all goroutines in bubble are blocked\): every goroutine of the bubble is blocked and no timer is pending; they wait at:\n.*waitForever`),
		regexp.MustCompile(`--- PASS: TestSurvivorChild `),
	} {
		if !want.MatchString(text) {
			t.Errorf("the child's output does not match %q:\n%s", want, tail(out))
		}
	}
}
