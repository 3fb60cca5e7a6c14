package envtest

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble"
)

// A goroutine of the suite's bubble that waits on a socket is not durably
// blocked: while it waits, the bubble's clock cannot move, and every
// Eventually, sleep and requeue of the suite waits with it, for ever. The
// watchdog, a goroutine outside the bubble on the wall clock, reads the
// bubble's goroutines a few times a second and ends the test binary with
// a message naming the socket's owner and what to change, once one has
// waited on a socket for socketPatience. It only reads: when virtual
// time advances never depends on it.

// socketPatience is how long (wall clock) a goroutine of the bubble may
// wait on one socket before the watchdog gives up on the suite: a
// server a spec starts and stops (an httptest.Server it calls) is left
// alone, a Manager's listener that lives as long as the suite is not.
const socketPatience = 2 * time.Second

// watchPeriod is how often the watchdog reads the bubble's goroutines.
const watchPeriod = 250 * time.Millisecond

// socketWait is a goroutine of the bubble waiting on a socket.
type socketWait struct {
	id       int
	listener bool   // waits for connections (else reads from one)
	owner    string // the innermost function that is not Go's networking: who listens or reads
	advice   string // what to change
}

// socketWaits returns the goroutines of gs that wait on a socket, as
// listeners (in Accept) or readers of a connection. Other waits for I/O
// (pipes, files) are left out: they end by themselves.
func socketWaits(gs []bubble.Goroutine) []socketWait {
	var out []socketWait
	for _, g := range gs {
		if g.Wait != "IO wait" {
			continue
		}
		var w socketWait
		switch {
		case g.Calls("net.(*TCPListener).Accept", "net.(*UnixListener).Accept", "net.(*netFD).accept"):
			w.listener = true
		case g.Calls("net.(*conn).Read", "net.(*netFD).Read", "crypto/tls.(*Conn).Read"):
		default:
			continue
		}
		w.id = g.ID
		w.owner = owner(g)
		w.advice = advice(w)
		out = append(out, w)
	}
	return out
}

// owner is the innermost frame of g that is not the runtime's or Go's
// networking, or what started g.
func owner(g bubble.Goroutine) string {
	for _, f := range g.Frames {
		if !hasAnyPrefix(f.Func, "runtime.", "internal/", "net.", "net/http.", "crypto/tls.", "bufio.", "io.", "syscall.", "sync.") {
			return f.Func
		}
	}
	if g.Creator != "" {
		return g.Creator
	}
	return "?"
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// advice says what to change so that the suite runs without w.
func advice(w socketWait) string {
	const wall = "or run this suite on the wall clock (ginkgo.RunSpecs instead of envtest.RunSpecs, or CTRLKIT_WALL_CLOCK=1)"
	switch {
	case strings.Contains(w.owner, "controller-runtime/pkg/metrics/server."):
		return "the Manager's metrics server: set ctrl.Options.Metrics.BindAddress to \"0\" (or leave it empty: under envtest.RunSpecs the default is \"0\"), " + wall
	case strings.Contains(w.owner, "controller-runtime/pkg/webhook."):
		return "a webhook server: webhooks are called over real sockets, which virtual time cannot wait on; run this suite on the wall clock (ginkgo.RunSpecs instead of envtest.RunSpecs, or CTRLKIT_WALL_CLOCK=1)"
	case strings.Contains(w.owner, "controller-runtime/pkg/manager."):
		return "a server of the Manager: set ctrl.Options.HealthProbeBindAddress and PprofBindAddress to \"\" or \"0\", " + wall
	case !w.listener:
		return "a connection over a real socket: only the Environment's rest.Config reaches the bench in process (is this suite's Environment still controller-runtime's envtest, or a rest.Config of a real cluster?), " + wall
	}
	return "a listener the suite started: stop it before the spec ends, " + wall
}

// message is the watchdog's verdict on w.
func (w socketWait) message(spec string) string {
	what := "reads from a connection"
	if w.listener {
		what = "listens for connections"
	}
	where := ""
	if spec != "" {
		where = fmt.Sprintf(" (in spec %q)", spec)
	}
	return fmt.Sprintf("envtest: virtual time cannot advance: goroutine %d of the suite %s on a real socket, in %s%s. "+
		"A goroutine waiting on a socket is not durably blocked (see testing/synctest), so the suite's clock stops and every Eventually, sleep and requeue waits for ever. "+
		"It is %s",
		w.id, what, w.owner, where, w.advice)
}

// watchdog watches the goroutines of a bubble from outside it.
type watchdog struct {
	bubble  atomic.Uint64          // the bubble, once it runs
	spec    atomic.Pointer[string] // the spec running, for messages
	signals chan os.Signal         // interrupts, once the suite's own handler is reset
	stop    chan struct{}
	done    sync.WaitGroup
}

// startWatchdog starts a watchdog; give it its bubble with w.bubble.Store.
func startWatchdog() *watchdog {
	w := &watchdog{signals: make(chan os.Signal, 1), stop: make(chan struct{})}
	w.done.Go(w.run)
	return w
}

// close stops the watchdog.
func (w *watchdog) close() {
	close(w.stop)
	w.done.Wait()
}

func (w *watchdog) run() {
	tick := time.NewTicker(watchPeriod)
	defer tick.Stop()
	seen := map[int]int{} // goroutine → readings in a row waiting on a socket
	for {
		select {
		case <-w.stop:
			return
		case sig := <-w.signals:
			w.interrupted(sig)
		case <-tick.C:
		}
		id := w.bubble.Load()
		if id == 0 {
			continue
		}
		now := map[int]int{}
		for _, s := range socketWaits(bubble.Of(id)) {
			now[s.id] = seen[s.id] + 1
			if time.Duration(now[s.id])*watchPeriod >= socketPatience {
				panic(s.message(w.specText()))
			}
		}
		seen = now
	}
}

func (w *watchdog) specText() string {
	if p := w.spec.Load(); p != nil {
		return *p
	}
	return ""
}

// interrupted ends the test binary after an interrupt (Ctrl-C, SIGTERM),
// saying where the suite's goroutines wait: Ginkgo's own handler, which
// would report and clean up, cannot run across the bubble's edge.
func (w *watchdog) interrupted(sig os.Signal) {
	var b strings.Builder
	fmt.Fprintf(&b, "envtest: %v", sig)
	if spec := w.specText(); spec != "" {
		fmt.Fprintf(&b, " in spec %q", spec)
	}
	if id := w.bubble.Load(); id != 0 {
		b.WriteString("; the suite's goroutines wait at:\n")
		b.WriteString(strings.Join(summarize(bubble.Of(id), 0), "\n"))
	}
	fmt.Fprintln(os.Stderr, b.String())
	os.Exit(1)
}
