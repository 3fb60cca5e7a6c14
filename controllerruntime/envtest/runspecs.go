package envtest

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/onsi/ginkgo/v2"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble"
)

// WallClockEnv is the environment variable that, set to any value, makes
// [RunSpecs] run the suite on the wall clock, as ginkgo.RunSpecs does: to
// compare, or for a suite that must talk over real sockets.
const WallClockEnv = "CTRLKIT_WALL_CLOCK"

// leftoverGrace is how long (virtual time) RunSpecs waits, after the last
// spec, for the suite's goroutines to end.
const leftoverGrace = 30 * time.Second

// RunSpecs runs the suite's specs as ginkgo.RunSpecs does, but in virtual
// time: inside a testing/synctest bubble, where time (time.Now, timers,
// sleeps: Gomega's Eventually and Consistently polls and timeouts,
// Ginkgo's timeouts, a Manager's requeues and resyncs, client-go's
// backoffs) moves only when every goroutine of the suite is blocked, and
// then straight to the next timer. A passing suite costs the CPU of its
// work, and an Eventually that times out after two minutes costs no wall
// time. The suite switches by one line:
//
//	RunSpecs(t, "Controller Suite") // was ginkgo's RunSpecs
//	envtest.RunSpecs(t, "Controller Suite")
//
// Everything the suite does must stay inside the bubble, which it does
// when its cluster is this package's [Environment] (started in
// BeforeSuite, as suites do): requests reach it in process, over channels.
// A goroutine waiting on a real socket stops virtual time; RunSpecs owns
// what would make one for the duration of the suite (see below), and
// ends the test binary with a message naming any other (a Manager's
// metrics or health-probe listener at an address the suite set, a webhook
// server, a connection to a real cluster, a real control plane started by
// controller-runtime's envtest, a lock held across a request)
// once the suite has been stuck on it for two seconds of wall time.
//
// What RunSpecs changes in the process, and restores when the suite ends:
//
//   - controller-runtime's metricsserver.DefaultBindAddress is "0": a
//     Manager whose Metrics.BindAddress is empty starts no metrics
//     listener;
//   - math/rand's global source is seeded with Ginkgo's random seed
//     (-ginkgo.seed), so that client-go's jitter replays: the same seed
//     runs the same specs in the same order, and the Environment's trace
//     is the same run after run;
//   - interrupts (Ctrl-C, SIGTERM) end the test binary at once, printing
//     where the suite's goroutines wait, instead of Ginkgo's
//     interrupt handling (its handler cannot reach across the bubble's
//     edge); the bench holds no processes or files to clean up. Ginkgo's
//     progress signal (SIGUSR1, SIGINFO) prints where they wait.
//
// Goroutines still running 30 virtual seconds after the last spec (a
// Manager whose context AfterSuite does not cancel) are listed in the
// test's log and abandoned. Times Ginkgo reports (spec durations,
// timestamps) are virtual: the bubble's clock starts at 2000-01-01 00:00
// UTC. Parallel Ginkgo (-p) is refused: its processes talk to Ginkgo's
// server over sockets.
//
// With CTRLKIT_WALL_CLOCK set (see [WallClockEnv]) RunSpecs is
// ginkgo.RunSpecs, and the Environment runs on the wall clock.
func RunSpecs(t *testing.T, description string, args ...any) bool {
	t.Helper()
	if os.Getenv(WallClockEnv) != "" {
		return ginkgo.RunSpecs(t, description, args...)
	}
	if bubble.Current() != 0 {
		t.Fatal("envtest: RunSpecs called inside a synctest bubble: it runs the suite in a bubble of its own")
	}
	suite, _ := ginkgo.GinkgoConfiguration()
	if suite.ParallelTotal > 1 {
		t.Fatalf("envtest: RunSpecs runs the suite in virtual time, in one process: parallel Ginkgo (%d processes) talks to its server over sockets, which virtual time cannot wait on; "+
			"run the suite without -p, or on the wall clock (%s=1)", suite.ParallelTotal, WallClockEnv)
	}
	restore := ownProcessState(suite.RandomSeed)
	defer restore()
	w := startWatchdog()
	defer w.close()
	// Run inside the bubble: once Ginkgo has registered its interrupt
	// handler (a channel of the bubble, which the runtime's signal loop
	// outside it must never touch), and as each spec starts.
	ginkgo.ReportBeforeSuite(func(ginkgo.Report) { w.takeSignals() })
	ginkgo.ReportBeforeEach(func(r ginkgo.SpecReport) {
		text := r.FullText()
		w.spec.Store(&text)
	})

	var passed bool
	var virtual time.Duration
	start := time.Now()
	defer func() {
		r := recover()
		err, _ := r.(error)
		switch {
		case r == nil:
		case err != nil && strings.HasPrefix(err.Error(), "deadlock: main bubble goroutine has exited"):
			// What was left running was listed; it stays blocked.
		case err != nil && strings.HasPrefix(err.Error(), "deadlock: "):
			t.Errorf("envtest: the suite deadlocked (testing/synctest: %v): every goroutine of it is blocked and no timer is pending; they wait at:\n%s",
				err, strings.Join(summarize(bubble.Of(w.bubble.Load()), 0), "\n"))
		default:
			panic(r)
		}
		t.Logf("envtest: the suite ran %v of virtual time in %v of wall time", virtual.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}()
	synctest.Test(t, func(*testing.T) {
		w.bubble.Store(bubble.Current())
		begin := time.Now()
		// The test's own t, not the bubble's: a failing suite fails the
		// test and RunSpecs returns, as ginkgo.RunSpecs does.
		passed = ginkgo.RunSpecs(t, description, args...)
		virtual = time.Since(begin)
		w.takeSignals() // in case the suite ran no spec
		if left := awaitLeftovers(bubble.Current(), bubble.Self()); len(left) > 0 {
			t.Logf("envtest: goroutines of the suite still running %v after its last spec, abandoned (does AfterSuite cancel the Manager's context and stop what the suite started?):\n%s",
				leftoverGrace, strings.Join(left, "\n"))
		}
	})
	return passed
}

// ownProcessState sets what RunSpecs changes in the process (see
// RunSpecs) and returns the function that restores it.
func ownProcessState(seed int64) (restore func()) {
	// The runtime starts its signal goroutines at the first Notify: they
	// must start here, outside the bubble (in it, the first would be a
	// goroutine of the bubble that never ends, and the runtime's signal
	// mask goroutine would select on channels of the bubble from outside).
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	signal.Stop(c)
	address := metricsserver.DefaultBindAddress
	metricsserver.DefaultBindAddress = "0"
	rand.Seed(seed) // client-go's jitter draws from the global source; clustertest lets Seed seed it
	return func() {
		metricsserver.DefaultBindAddress = address
		signal.Reset(append(slices.Clone(interrupts), progressSignals...)...)
	}
}

// interrupts are the signals on which Ginkgo stops the suite.
var interrupts = []os.Signal{os.Interrupt, syscall.SIGTERM}

// takeSignals replaces every handler of the signals Ginkgo handles (its
// channels belong to the bubble: the runtime's signal loop, outside it,
// must not touch them) with the watchdog's.
func (w *watchdog) takeSignals() {
	signals := append(slices.Clone(interrupts), progressSignals...)
	signal.Reset(signals...)
	signal.Notify(w.signals, signals...)
}

// awaitLeftovers waits, in virtual time, up to leftoverGrace for the
// goroutines of bubble id (but the caller) to end, and returns those
// still there.
func awaitLeftovers(id uint64, self int) []string {
	for wait := time.Millisecond; ; wait *= 2 {
		left := summarize(bubble.Of(id), self)
		if len(left) == 0 || wait > leftoverGrace {
			return left
		}
		time.Sleep(wait)
	}
}

// summarize describes the goroutines gs of the suite, but goroutine self
// and those of testing/synctest and Ginkgo that stay by design, grouped by
// where they wait: "3× [select] k8s.io/client-go/... , started by ...".
func summarize(gs []bubble.Goroutine, self int) []string {
	count := map[string]int{}
	var order []string
	for _, g := range gs {
		if g.ID == self || g.Calls("testing.testingSynctestTest", "testing/synctest.", "internal/synctest.Run", "github.com/onsi/ginkgo/v2/internal/interrupt_handler.") {
			continue
		}
		where := g.Where()
		if count[where] == 0 {
			order = append(order, where)
		}
		count[where]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(count[b], count[a]) })
	var out []string
	for _, where := range order {
		out = append(out, fmt.Sprintf("%d× %s", count[where], where))
	}
	return out
}

// errWebhooks is Start's answer, in virtual time, to a suite with
// webhooks.
var errWebhooks = errors.New("envtest: this suite has webhooks (WebhookInstallOptions), which cannot run in virtual time: a webhook server listens on a real socket, " +
	"and a goroutine waiting on a socket stops the clock of envtest.RunSpecs; run this suite on the wall clock (ginkgo.RunSpecs instead of envtest.RunSpecs, or " + WallClockEnv + "=1)")
