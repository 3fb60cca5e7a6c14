package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeClock runs AfterFunc callbacks in their own goroutines, as the real
// clock does; the fake one calls them inside Step, holding its lock.
type fakeClock struct{ *clocktesting.FakeClock }

func (c fakeClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.FakeClock.AfterFunc(d, func() { go f() })
}

func newFakeClock() fakeClock { return fakeClock{clocktesting.NewFakeClock(time.Unix(1000, 0))} }

// step moves the clock on once the limiter has armed its timer: a waiter
// may see its grant before the dispatch that made it arms the next one.
func (c fakeClock) step(t *testing.T, d time.Duration) {
	t.Helper()
	waitFor(t, "the limiter's timer", c.HasWaiters)
	c.Step(d)
}

// grants records the order in which waiters got their tokens.
type grants struct {
	mu    sync.Mutex
	order []string
}

func (g *grants) add(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.order = append(g.order, s)
}

func (g *grants) get() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.order...)
}

// lineUp runs door in a goroutine of wg that records name once it has its
// token, and returns when that goroutine waits in l's queue.
func (g *grants) lineUp(t *testing.T, wg *sync.WaitGroup, l *PriorityLimiter, name string, door func() error) {
	t.Helper()
	n := waiters(l)
	wg.Go(func() {
		if err := door(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		g.add(name)
	})
	waitFor(t, name+" to queue", func() bool { return waiters(l) == n+1 })
}

// release moves clk on a second at a time, n times, waiting each time for
// the token of that second (the limiters here earn one a second) to reach
// its waiter.
func (g *grants) release(t *testing.T, clk fakeClock, n int) {
	t.Helper()
	for range n {
		had := len(g.get())
		clk.step(t, time.Second)
		waitFor(t, fmt.Sprintf("grant %d", had+1), func() bool { return len(g.get()) == had+1 })
	}
}

// waitFor polls until cond holds; the limiter's timers fire in their own
// goroutines.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func waiters(l *PriorityLimiter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting[0].Len() + l.waiting[1].Len()
}

func TestPriorityLimiterBurstThenRate(t *testing.T) {
	clk := newFakeClock()
	l, err := newPriorityLimiter(10, 3, clk)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if !l.Low().TryAccept() {
			t.Fatalf("token %d of the burst refused", i)
		}
	}
	if l.High().TryAccept() {
		t.Fatal("a fourth token granted with no time passed")
	}
	clk.Step(250 * time.Millisecond) // 2.5 tokens at 10 a second
	if !l.High().TryAccept() || !l.High().TryAccept() {
		t.Fatal("tokens earned over 250ms refused")
	}
	if l.High().TryAccept() {
		t.Fatal("half a token granted")
	}
	clk.Step(time.Hour)
	n := 0
	for l.Low().TryAccept() {
		n++
	}
	if n != 3 {
		t.Fatalf("after an hour %d tokens, want the burst, 3", n)
	}
	if got := l.High().QPS(); got != 10 {
		t.Fatalf("QPS() = %v, want 10", got)
	}
}

func TestPriorityLimiterHighGoesFirst(t *testing.T) {
	clk := newFakeClock()
	l, err := newPriorityLimiter(1, 1, clk)
	if err != nil {
		t.Fatal(err)
	}
	if !l.High().TryAccept() {
		t.Fatal("the burst token refused")
	}
	var g grants
	var wg sync.WaitGroup
	ctx := context.Background()
	// Low waiters arrive first, High ones after; each second one token.
	g.lineUp(t, &wg, l, "low1", func() error { return l.Low().Wait(ctx) })
	g.lineUp(t, &wg, l, "low2", func() error { return l.Low().Wait(ctx) })
	g.lineUp(t, &wg, l, "high1", func() error { return l.High().Wait(ctx) })
	g.lineUp(t, &wg, l, "high2", func() error { l.High().Accept(); return nil })
	if l.Low().TryAccept() || l.High().TryAccept() {
		t.Fatal("TryAccept jumped the queue")
	}
	want := []string{"high1", "high2", "low1", "low2"}
	g.release(t, clk, len(want))
	wg.Wait()
	got := g.get()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("grant order %v, want %v", got, want)
		}
	}
}

// A High request takes a token even while Low ones wait: they only get
// what High leaves.
func TestPriorityLimiterHighPassesWaitingLow(t *testing.T) {
	clk := newFakeClock()
	l, err := newPriorityLimiter(1, 2, clk)
	if err != nil {
		t.Fatal(err)
	}
	l.High().Accept()
	l.High().Accept()
	done := make(chan error, 1)
	go func() { done <- l.Low().Wait(context.Background()) }()
	waitFor(t, "low to queue", func() bool { return waiters(l) == 1 })
	clk.Step(999 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("low granted before a token was whole (err %v)", err)
	case <-time.After(20 * time.Millisecond):
	}
	clk.Step(2 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// While High always has waiters, Low still gets one token in LowShare.
func TestPriorityLimiterLowIsNotStarved(t *testing.T) {
	clk := newFakeClock()
	l, err := newPriorityLimiter(1, 1, clk)
	if err != nil {
		t.Fatal(err)
	}
	l.High().Accept()
	var g grants
	var wg sync.WaitGroup
	ctx := context.Background()
	g.lineUp(t, &wg, l, "low", func() error { return l.Low().Wait(ctx) })
	const highs = 2 * LowShare
	for i := range highs {
		g.lineUp(t, &wg, l, fmt.Sprintf("high%d", i), func() error { return l.High().Wait(ctx) })
	}
	g.release(t, clk, highs+1)
	wg.Wait()
	got := g.get()
	if got[LowShare-1] != "low" {
		t.Fatalf("grants %v: want Low's as number %d, after %d of High's", got, LowShare, LowShare-1)
	}
	for i, name := range got[:LowShare-1] {
		if want := fmt.Sprintf("high%d", i); name != want {
			t.Fatalf("grants %v: want High's in arrival order", got)
		}
	}
}

// stillClock's timers never fire, so that tokens pile up beside waiters
// until the test dispatches them.
type stillClock struct{ *clocktesting.FakeClock }

func (stillClock) AfterFunc(time.Duration, func()) clock.Timer { return stillTimer{} }

type stillTimer struct{}

func (stillTimer) C() <-chan time.Time      { return nil }
func (stillTimer) Stop() bool               { return true }
func (stillTimer) Reset(time.Duration) bool { return true }

// TryAccept through High passes a waiting Low only until it is Low's turn.
func TestPriorityLimiterTryAcceptKeepsLowsTurn(t *testing.T) {
	clk := stillClock{clocktesting.NewFakeClock(time.Unix(1000, 0))}
	l, err := newPriorityLimiter(1, 1, clk)
	if err != nil {
		t.Fatal(err)
	}
	l.High().Accept()
	done := make(chan error, 1)
	go func() { done <- l.Low().Wait(context.Background()) }()
	waitFor(t, "low to queue", func() bool { return waiters(l) == 1 })
	for i := range LowShare - 1 {
		clk.Step(time.Second)
		if !l.High().TryAccept() {
			t.Fatalf("TryAccept through High refused with a token there, %d after Low's last", i)
		}
	}
	clk.Step(time.Second)
	if l.High().TryAccept() {
		t.Fatalf("TryAccept through High took the token after %d of High's, Low's turn", LowShare-1)
	}
	l.fire()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if !l.High().TryAccept() {
		t.Fatal("TryAccept through High refused after Low's turn")
	}
}

func TestPriorityLimiterCancelledWaiterLeavesTheQueue(t *testing.T) {
	clk := newFakeClock()
	l, err := newPriorityLimiter(1, 1, clk)
	if err != nil {
		t.Fatal(err)
	}
	l.High().Accept()
	ctx, cancel := context.WithCancel(context.Background())
	highErr := make(chan error, 1)
	go func() { highErr <- l.High().Wait(ctx) }()
	waitFor(t, "high to queue", func() bool { return waiters(l) == 1 })
	lowErr := make(chan error, 1)
	go func() { lowErr <- l.Low().Wait(context.Background()) }()
	waitFor(t, "low to queue", func() bool { return waiters(l) == 2 })
	cancel()
	if err := <-highErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait returned %v, want context.Canceled", err)
	}
	if n := waiters(l); n != 1 {
		t.Fatalf("%d waiters after the cancellation, want 1", n)
	}
	// The token the cancelled waiter did not take goes to Low.
	clk.Step(time.Second)
	if err := <-lowErr; err != nil {
		t.Fatal(err)
	}
	if l.High().TryAccept() {
		t.Fatal("a token left over: the cancelled waiter's was counted twice")
	}
	if err := l.High().Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a done context returned %v", err)
	}
}

func TestPriorityLimiterBadArguments(t *testing.T) {
	for _, c := range []struct {
		qps   float32
		burst int
	}{{0, 1}, {-1, 1}, {1, 0}} {
		if _, err := NewPriorityLimiter(c.qps, c.burst); err == nil {
			t.Errorf("NewPriorityLimiter(%v, %d) accepted", c.qps, c.burst)
		}
	}
}

// On the real clock, many goroutines through both doors get no more than
// the rate allows, and all of them get through.
func TestPriorityLimiterConcurrent(t *testing.T) {
	const qps, burst, n = 2000, 10, 200
	l, err := NewPriorityLimiter(qps, burst)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		door := l.High()
		if i%3 == 0 {
			door = l.Low()
		}
		wg.Go(func() {
			if err := door.Wait(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if min := time.Duration(float64(n-burst) / qps * float64(time.Second)); time.Since(start) < min {
		t.Fatalf("%d tokens in %v; the rate allows them no sooner than %v", n, time.Since(start), min)
	}
	if w := waiters(l); w != 0 {
		t.Fatalf("%d waiters left", w)
	}
}
