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

// A goroutine of the suite's bubble that is blocked, but not durably (on
// a socket, a lock, a channel made outside the bubble), keeps the bubble's
// clock from moving: while it waits, every Eventually, sleep and requeue
// of the suite waits with it. The watchdog, a goroutine outside the
// bubble on the wall clock, reads the bubble's goroutines a few times a
// second. Once every goroutine of the suite has been blocked, nothing
// changing, for patience, it ends the test binary with a message naming
// what waits and what to change, if what waits cannot end by itself: a
// listener, a connection read, a lock (whose holder waits in the bubble),
// a real control plane started in the bubble (controller-runtime's
// envtest.Environment). Other waits that last (a pipe, a system call, a
// channel of no bubble) are named in a warning after warnAfter. The watchdog only reads: when
// virtual time advances never depends on it.

// patience is how long (wall clock) the suite may stay stuck before the
// watchdog gives up on it: a spec that calls a server of its own (an
// httptest.Server) keeps moving, and is left alone.
const patience = 2 * time.Second

// warnAfter is how long (wall clock) a wait that may end by itself lasts,
// with nothing else moving, before the watchdog warns about it.
const warnAfter = 10 * time.Second

// watchPeriod is how often the watchdog reads the bubble's goroutines.
const watchPeriod = 250 * time.Millisecond

// stallKind is why a goroutine's wait is not durable.
type stallKind int

const (
	listening    stallKind = iota // in Accept, on a socket
	reading                       // reading a connection over a socket
	locking                       // waiting for a sync.Mutex or RWMutex
	controlPlane                  // waiting for etcd or kube-apiserver, started by controller-runtime's envtest
	outside                       // on something else outside the bubble: a channel of no bubble, a pipe, a system call
)

// stall is a goroutine of the bubble blocked, but not durably.
type stall struct {
	id    int
	kind  stallKind
	wait  string // the runtime's wait reason
	owner string // the innermost function that is not Go's: who waits
}

// snapshot is what the watchdog reads of the bubble at one time.
type snapshot struct {
	stalls []stall
	busy   bool   // a goroutine runs, or can run
	key    string // every goroutine's id and wait: an unchanged key means nothing moved
}

// read reads the goroutines of a bubble.
func read(gs []bubble.Goroutine) snapshot {
	var sn snapshot
	var key strings.Builder
	for _, g := range gs {
		fmt.Fprintf(&key, "%d:%s;", g.ID, g.Wait)
		switch {
		case g.Durable:
			continue
		case g.Wait == "running" || g.Wait == "runnable":
			sn.busy = true
			continue
		}
		st := stall{id: g.ID, wait: g.Wait, owner: owner(g), kind: outside}
		switch {
		case g.Wait == "IO wait" && g.Calls("net.(*TCPListener).Accept", "net.(*UnixListener).Accept", "net.(*netFD).accept"):
			st.kind = listening
		case g.Wait == "IO wait" && g.Calls("net.(*conn).Read", "net.(*netFD).Read", "crypto/tls.(*Conn).Read"):
			st.kind = reading
		case strings.HasPrefix(g.Wait, "sync.Mutex.") || strings.HasPrefix(g.Wait, "sync.RWMutex."):
			st.kind = locking
		case g.Calls("os.(*Process).Wait") && g.Calls(realControlPlane):
			st.kind = controlPlane
		}
		sn.stalls = append(sn.stalls, st)
	}
	sn.key = key.String()
	return sn
}

// realControlPlane is the package with which controller-runtime's
// envtest starts and waits for etcd and kube-apiserver.
const realControlPlane = "sigs.k8s.io/controller-runtime/pkg/internal/testing/process."

// owner is the innermost frame of g that is not the runtime's or Go's
// networking and synchronisation, or what started g.
func owner(g bubble.Goroutine) string {
	for _, f := range g.Frames {
		if !hasAnyPrefix(f.Func, "runtime.", "internal/", "net.", "net/http.", "crypto/tls.", "bufio.", "io.", "os.", "os/", "syscall.", "sync.") {
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

// onWallClock says how to run the suite without virtual time.
const onWallClock = "run this suite on the wall clock (ginkgo.RunSpecs instead of envtest.RunSpecs, or " + WallClockEnv + "=1)"

// describe says what st waits on, and what to change.
func (st stall) describe() string {
	switch st.kind {
	case listening:
		text := fmt.Sprintf("goroutine %d listens for connections on a real socket, in %s: ", st.id, st.owner)
		switch {
		case strings.Contains(st.owner, "controller-runtime/pkg/metrics/server."):
			return text + "the Manager's metrics server; set ctrl.Options.Metrics.BindAddress to \"0\" (or leave it empty: under envtest.RunSpecs the default is \"0\"), or " + onWallClock
		case strings.Contains(st.owner, "controller-runtime/pkg/webhook."):
			return text + "a webhook server; webhooks are called over real sockets, which virtual time cannot wait on: " + onWallClock
		case strings.Contains(st.owner, "controller-runtime/pkg/manager."):
			return text + "a server of the Manager; set ctrl.Options.HealthProbeBindAddress and PprofBindAddress to \"\" or \"0\", or " + onWallClock
		}
		return text + "stop it before the spec ends, or " + onWallClock
	case reading:
		return fmt.Sprintf("goroutine %d reads from a connection over a real socket, in %s: only the Environment's rest.Config reaches the bench in process "+
			"(is this suite's Environment still controller-runtime's envtest, or a rest.Config of a real cluster?); or %s", st.id, st.owner, onWallClock)
	case controlPlane:
		return fmt.Sprintf("goroutine %d waits for a process of a real control plane (etcd or kube-apiserver, in %s): controller-runtime's envtest.Environment started it, "+
			"and a real cluster answers over sockets, on the wall clock: start this package's Environment instead, or, for a suite that switches to controller-runtime's envtest, run it on the wall clock "+
			"(ginkgo.RunSpecs instead of envtest.RunSpecs, or %s=1)", st.id, st.owner, WallClockEnv)
	case locking:
		return fmt.Sprintf("goroutine %d waits for a lock (%s) in %s, whose holder waits, for the cluster or for time, while it holds it: "+
			"code that holds a lock across a request while another goroutine wants the lock cannot run in virtual time; %s", st.id, st.wait, st.owner, onWallClock)
	}
	return fmt.Sprintf("goroutine %d waits (%s) in %s, on something outside the suite's bubble (a channel made outside it, a pipe, a system call)", st.id, st.wait, st.owner)
}

// verdict is the watchdog's message once it gives up on the suite for
// stalls.
func verdict(stalls []stall, spec string) string {
	var b strings.Builder
	b.WriteString("envtest: virtual time cannot advance")
	if spec != "" {
		fmt.Fprintf(&b, " (in spec %q)", spec)
	}
	b.WriteString(": a goroutine blocked, but not durably (see testing/synctest), stops the suite's clock, and every Eventually, sleep and requeue waits for ever:")
	for _, st := range stalls {
		b.WriteString("\n  ")
		b.WriteString(st.describe())
	}
	return b.String()
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
	var last snapshot
	still := 0 // readings in a row with nothing moving, every goroutine blocked, some not durably
	warned := false
	for {
		select {
		case <-w.stop:
			return
		case sig := <-w.signals:
			fmt.Fprintln(os.Stderr, w.where(sig))
			if !slices.Contains(progressSignals, sig) {
				os.Exit(1)
			}
			continue
		case <-tick.C:
		}
		id := w.bubble.Load()
		if id == 0 {
			continue
		}
		sn := read(bubble.Of(id))
		if !sn.busy && len(sn.stalls) > 0 && sn.key == last.key {
			still++
		} else {
			still = 0
		}
		last = sn
		stuck := time.Duration(still) * watchPeriod
		var fatal []stall
		for _, st := range sn.stalls {
			if st.kind != outside {
				fatal = append(fatal, st)
			}
		}
		if stuck >= patience && len(fatal) > 0 {
			msg := verdict(fatal, w.specText())
			if slices.ContainsFunc(fatal, func(st stall) bool { return st.kind == controlPlane }) {
				if ended := endChildren(); len(ended) > 0 {
					msg += fmt.Sprintf("\n(the test binary's child processes, %v, were sent SIGTERM, so as not to outlive it)", ended)
				}
			}
			panic(msg)
		}
		if stuck >= warnAfter && !warned {
			warned = true
			fmt.Fprintf(os.Stderr, "envtest: warning: the suite's clock has not moved for %v of wall time: every goroutine of it is blocked, and these not durably, so that virtual time cannot advance until they are done:\n%s\n",
				warnAfter, strings.Join(describeAll(sn.stalls), "\n"))
		}
	}
}

func describeAll(stalls []stall) []string {
	var out []string
	for _, st := range stalls {
		out = append(out, "  "+st.describe())
	}
	return out
}

func (w *watchdog) specText() string {
	if p := w.spec.Load(); p != nil {
		return *p
	}
	return ""
}

// where says, after a signal, where the suite's goroutines wait: on an
// interrupt (Ctrl-C, SIGTERM) the watchdog prints it and ends the test
// binary, as Ginkgo's own handler, which would report and clean up,
// cannot run across the bubble's edge; on Ginkgo's progress signal it
// prints it.
func (w *watchdog) where(sig os.Signal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "envtest: %v", sig)
	if spec := w.specText(); spec != "" {
		fmt.Fprintf(&b, " in spec %q", spec)
	}
	if id := w.bubble.Load(); id != 0 {
		b.WriteString("; the suite's goroutines wait at:\n")
		b.WriteString(strings.Join(summarize(bubble.Of(id), 0), "\n"))
	}
	return b.String()
}
