package envtest

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble"
)

// started runs f in a goroutine and returns its id, once it has started.
func started(f func()) int {
	id := make(chan int)
	go func() {
		id <- bubble.Self()
		f()
	}()
	return <-id
}

// awaitWaits waits until each goroutine of ids waits as want says, and
// returns them.
func awaitWaits(t *testing.T, want map[int]string) map[int]bubble.Goroutine {
	t.Helper()
	for {
		got := map[int]bubble.Goroutine{}
		for _, g := range bubble.Of(0) {
			if w, ok := want[g.ID]; ok && g.Wait == w {
				got[g.ID] = g
			}
		}
		if len(got) == len(want) {
			return got
		}
		runtime.Gosched()
	}
}

// TestReadNamesWhatStopsTheClock reads goroutines that wait, but not
// durably, as a suite's would stop its clock: a metrics server's
// listener, a reader of a TCP connection, a lock's waiter, a receive from
// a channel, and says what each is.
func TestReadNamesWhatStopsTheClock(t *testing.T) {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	metrics, err := metricsserver.NewServer(metricsserver.Options{BindAddress: "127.0.0.1:0"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan int)
	wg.Go(func() {
		served <- bubble.Self()
		if err := metrics.Start(ctx); err != nil {
			t.Error(err)
		}
	})
	listener := <-served // Start serves in its caller's goroutine

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reader := started(func() { readOne(conn) })
	var mu sync.Mutex
	mu.Lock()
	locker := started(func() { lockOnce(&mu) })
	ch := make(chan struct{})
	receiver := started(func() { receiveOnce(ch) })
	defer func() { mu.Unlock(); close(ch) }()

	gs := awaitWaits(t, map[int]string{listener: "IO wait", reader: "IO wait", locker: "sync.Mutex.Lock", receiver: "chan receive"})
	sn := read([]bubble.Goroutine{gs[listener], gs[reader], gs[locker], gs[receiver]})
	type seen struct {
		Kind  stallKind
		Wait  string
		Owner string
	}
	var got []seen
	for _, st := range sn.stalls {
		got = append(got, seen{st.kind, st.wait, st.owner})
	}
	const here = "github.com/ctrlkit/ctrlkit/controllerruntime/envtest."
	want := []seen{
		{listening, "IO wait", "sigs.k8s.io/controller-runtime/pkg/metrics/server.(*defaultServer).Start"},
		{reading, "IO wait", here + "readOne"},
		{locking, "sync.Mutex.Lock", here + "lockOnce"},
		{outside, "chan receive", here + "receiveOnce"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(sn.stalls[0].owner, "controller-runtime/pkg/metrics/server.") {
		t.Errorf("the listener's owner = %q; want controller-runtime's metrics server", sn.stalls[0].owner)
	}
	if !strings.Contains(sn.stalls[0].describe(), "Metrics.BindAddress") {
		t.Errorf("the listener's description %q does not say to set Metrics.BindAddress", sn.stalls[0].describe())
	}
	if sn.busy {
		t.Error("read says a goroutine runs; want none (only waiting goroutines were read)")
	}
}

func readOne(conn net.Conn) { _, _ = conn.Read(make([]byte, 1)) }

func lockOnce(mu *sync.Mutex) {
	mu.Lock()
	defer mu.Unlock()
}

func receiveOnce(ch chan struct{}) { <-ch }

// TestReadLeavesDurableWaits reads a bubble whose goroutines all wait
// durably: nothing stops its clock.
func TestReadLeavesDurableWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := make(chan struct{})
		var cond = sync.NewCond(&sync.Mutex{})
		go func() { <-ch }()
		go func() { cond.L.Lock(); cond.Wait(); cond.L.Unlock() }()
		synctest.Wait()
		var others []bubble.Goroutine
		for _, g := range bubble.Of(bubble.Current()) {
			if g.ID != bubble.Self() {
				others = append(others, g)
			}
		}
		if sn := read(others); len(sn.stalls) > 0 {
			t.Errorf("read of durably blocked goroutines has stalls: %+v", sn.stalls)
		}
		close(ch)
		cond.L.Lock()
		cond.Broadcast()
		cond.L.Unlock()
	})
}

func TestVerdictSaysWhatToChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   stall
		want []string
	}{
		{"metrics", stall{id: 3, kind: listening, owner: "sigs.k8s.io/controller-runtime/pkg/metrics/server.(*defaultServer).Start"},
			[]string{"goroutine 3 listens", "metrics server", "Metrics.BindAddress", "CTRLKIT_WALL_CLOCK=1"}},
		{"webhook", stall{id: 4, kind: listening, owner: "sigs.k8s.io/controller-runtime/pkg/webhook.(*DefaultServer).Start"},
			[]string{"webhook server", "ginkgo.RunSpecs"}},
		{"probes", stall{id: 5, kind: listening, owner: "sigs.k8s.io/controller-runtime/pkg/manager.(*Server).Start"},
			[]string{"HealthProbeBindAddress"}},
		{"connection", stall{id: 6, kind: reading, owner: "net/http.(*persistConn).readLoop"},
			[]string{"reads from a connection", "controller-runtime's envtest"}},
		{"lock", stall{id: 7, kind: locking, wait: "sync.RWMutex.RLock", owner: "example.com/op.(*cache).get"},
			[]string{"waits for a lock (sync.RWMutex.RLock) in example.com/op.(*cache).get", "holds a lock across a request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := verdict([]stall{tc.st}, "a spec")
			for _, w := range append(tc.want, "virtual time cannot advance", `(in spec "a spec")`) {
				if !strings.Contains(got, w) {
					t.Errorf("verdict = %q; want it to say %q", got, w)
				}
			}
		})
	}
}

// TestReadNamesARealControlPlane reads the goroutine with which
// controller-runtime's envtest waits for kube-apiserver, as a suite that
// started controller-runtime's envtest.Environment under RunSpecs has it
// (the stack is a CI run's): the watchdog gives up on it, and says to run
// the suite on the wall clock.
func TestReadNamesARealControlPlane(t *testing.T) {
	const dump = `goroutine 104 [syscall, synctest bubble 3]:
syscall.Syscall6(0xf7, 0x3, 0xe, 0x3f361c327e18, 0x4, 0x3f361c3810e0, 0x0)
	/usr/local/go/src/syscall/syscall_linux.go:96 +0x39
internal/syscall/unix.Waitid(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)
	/usr/local/go/src/internal/syscall/unix/waitid_linux.go:18 +0x39
os.(*Process).pidfdWait(0x3f361ca62740)
	/usr/local/go/src/os/pidfd_linux.go:107 +0x1c7
os.(*Process).wait(0x0?)
	/usr/local/go/src/os/exec_unix.go:25 +0x1a
os.(*Process).Wait(...)
	/usr/local/go/src/os/exec.go:346
os/exec.(*Cmd).Wait(0x3f361c7d76c0)
	/usr/local/go/src/os/exec/exec.go:930 +0x45
sigs.k8s.io/controller-runtime/pkg/internal/testing/process.(*State).Start.func1()
	/root/go/pkg/mod/sigs.k8s.io/controller-runtime@v0.25.2/pkg/internal/testing/process/process.go:178 +0x55
created by sigs.k8s.io/controller-runtime/pkg/internal/testing/process.(*State).Start in goroutine 72
	/root/go/pkg/mod/sigs.k8s.io/controller-runtime@v0.25.2/pkg/internal/testing/process/process.go:176 +0x3be

goroutine 105 [syscall, synctest bubble 3]:
os.(*Process).Wait(...)
	/usr/local/go/src/os/exec.go:346
os/exec.(*Cmd).Wait(0x3f361c7d76c0)
	/usr/local/go/src/os/exec/exec.go:930 +0x45
example.com/op.runTool()
	/src/op/tool.go:12 +0x45
`
	sn := read(bubble.Parse(dump))
	if len(sn.stalls) != 2 {
		t.Fatalf("read found %d stalls; want 2: %+v", len(sn.stalls), sn.stalls)
	}
	if got := sn.stalls[0]; got.kind != controlPlane || got.owner != "sigs.k8s.io/controller-runtime/pkg/internal/testing/process.(*State).Start.func1" {
		t.Errorf("envtest's wait for kube-apiserver read as kind %v in %q; want controlPlane in process.(*State).Start.func1", got.kind, got.owner)
	}
	if got := sn.stalls[1]; got.kind != outside {
		t.Errorf("a wait for a tool the suite runs read as kind %v; want outside (a warning: it may end by itself)", got.kind)
	}
	msg := verdict(sn.stalls[:1], "")
	for _, w := range []string{"goroutine 104 waits for a process of a real control plane", "controller-runtime's envtest.Environment started it", "CTRLKIT_WALL_CLOCK=1"} {
		if !strings.Contains(msg, w) {
			t.Errorf("verdict = %q; want it to say %q", msg, w)
		}
	}
}
