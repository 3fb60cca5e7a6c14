package bubble

import (
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	dump := `goroutine 7 [chan receive (durable), 3 minutes, synctest bubble 12]:
example.com/op.(*Reconciler).Reconcile(0xc000123456, {0x1, 0x2})
	/src/op/controller.go:52 +0x1d
k8s.io/client-go/tools/cache.(*Reflector).watch(...)
	/mod/client-go/tools/cache/reflector.go:512 +0x2a
created by example.com/op.Start in goroutine 1
	/src/op/start.go:3 +0x2a

goroutine 9 gp=0xc000001 m=nil [IO wait]:
internal/poll.runtime_pollWait(0x7f, 0x72)
	/go/src/runtime/netpoll.go:351 +0x85 fp=0x1 sp=0x2 pc=0x3
net.(*TCPListener).Accept(0xc000010000)
	/go/src/net/tcpsock.go:380 +0x30 fp=0x1 sp=0x2 pc=0x3

not a goroutine
`
	want := []Goroutine{
		{ID: 7, Wait: "chan receive", Durable: true, Bubble: 12, Creator: "example.com/op.Start", Frames: []Frame{
			{Func: "example.com/op.(*Reconciler).Reconcile", File: "controller.go", Line: 52},
			{Func: "k8s.io/client-go/tools/cache.(*Reflector).watch", File: "reflector.go", Line: 512},
		}},
		{ID: 9, Wait: "IO wait", Frames: []Frame{
			{Func: "internal/poll.runtime_pollWait", File: "netpoll.go", Line: 351},
			{Func: "net.(*TCPListener).Accept", File: "tcpsock.go", Line: 380},
		}},
	}
	if diff := cmp.Diff(want, Parse(dump)); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	g := Parse(dump)[0]
	if got, want := g.Where(), "[chan receive] example.com/op.(*Reconciler).Reconcile (controller.go:52), started by example.com/op.Start"; got != want {
		t.Errorf("Where() = %q; want %q", got, want)
	}
	if !g.Calls("k8s.io/client-go/tools/cache.") || g.Calls("net.") {
		t.Errorf("Calls: got %v for client-go and %v for net; want true and false", g.Calls("k8s.io/client-go/tools/cache."), g.Calls("net."))
	}
}

// TestOfTellsBubbles reads a bubble's goroutines from inside it: the
// bubble's own, durably blocked, and the test's goroutine that called
// synctest.Test (the runtime counts it in the bubble while it waits in
// synctest.Run).
func TestOfTellsBubbles(t *testing.T) {
	if got := Current(); got != 0 {
		t.Fatalf("Current() outside a bubble = %d; want 0", got)
	}
	outside := Self()
	synctest.Test(t, func(t *testing.T) {
		id := Current()
		if id == 0 {
			t.Fatal("Current() inside a bubble = 0")
		}
		block := make(chan struct{})
		go func() { <-block }()
		synctest.Wait()
		var waiting []Goroutine
		for _, g := range Of(id) {
			if g.Bubble != id {
				t.Errorf("Of(%d) has goroutine %d of bubble %d", id, g.ID, g.Bubble)
			}
			if g.ID == outside && g.Wait != "synctest.Run" {
				t.Errorf("the test's goroutine %d waits in %q; want synctest.Run", outside, g.Wait)
			}
			if g.Creator == "github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble.TestOfTellsBubbles.func1" {
				waiting = append(waiting, g)
			}
		}
		if len(waiting) != 1 || waiting[0].Wait != "chan receive" || !waiting[0].Durable || waiting[0].Bubble != id {
			t.Errorf("the goroutine the test started: %+v; want one, durably blocked in chan receive, of bubble %d", waiting, id)
		}
		close(block)
	})
}
