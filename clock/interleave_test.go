package clock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// lanes hands over, on f, n units of work from each of the sources named,
// round robin, and four timer callbacks due at +1s; it returns the order
// in which the units ran once the clock has moved past them.
func lanes(t *testing.T, f *Fake, n int, names ...string) []string {
	t.Helper()
	var mu sync.Mutex // a concurrent clock runs the units at once
	var order []string
	ran := func(u string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, u)
	}
	srcs := map[string]*Source{}
	for _, name := range names {
		srcs[name] = NewSource(f, name)
	}
	for i := range n {
		for _, name := range names {
			var w Work
			run := func() {
				ran(fmt.Sprintf("%s%d", name, i))
				w.Done()
			}
			var now bool
			if w, now = srcs[name].Start(run); now {
				go run()
			}
		}
	}
	for i := range 4 {
		f.AfterFunc(time.Second, func() { ran(fmt.Sprintf("timer%d", i)) })
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == n*len(names)+4
	}
	if err := f.RunUntil(context.Background(), done, time.Minute); err != nil {
		t.Fatalf("RunUntil() = %v", err)
	}
	return order
}

func TestInterleavedKeepsEachSourceInOrder(t *testing.T) {
	for seed := range uint64(20) {
		f := NewInterleaved(t0, Interleaving{Seed: seed, Rate: 1})
		order := lanes(t, f, 3, "a", "b", "c")
		next := map[byte]int{}
		for _, u := range order {
			if u[0] == 't' {
				continue
			}
			if want := fmt.Sprintf("%c%d", u[0], next[u[0]]); u != want {
				t.Errorf("seed %d: order %v: %s ran before %s", seed, order, u, want)
			}
			next[u[0]]++
		}
	}
}

func TestInterleavedReordersAndReplays(t *testing.T) {
	fifo := lanes(t, NewDeterministic(t0), 3, "a", "b", "c")
	want := "a0 b0 c0 a1 b1 c1 a2 b2 c2 timer0 timer1 timer2 timer3"
	if got := strings.Join(fifo, " "); got != want {
		t.Fatalf("NewDeterministic order = %s; want %s", got, want)
	}
	differs := 0
	for seed := range uint64(20) {
		f := NewInterleaved(t0, Interleaving{Seed: seed})
		order := lanes(t, f, 3, "a", "b", "c")
		s := f.Schedule()
		if (len(s) == 0) != (strings.Join(order, " ") == want) {
			t.Errorf("seed %d: order %v with schedule %q: a schedule must be empty exactly when the order is oldest first", seed, order, s)
		}
		if len(s) > 0 {
			differs++
		}
		// Same seed, same order.
		if again := lanes(t, NewInterleaved(t0, Interleaving{Seed: seed}), 3, "a", "b", "c"); !cmp.Equal(again, order) {
			t.Errorf("seed %d ran twice: %v, then %v", seed, order, again)
		}
		// The schedule, through its text, replays the order.
		parsed, err := ParseSchedule(s.String())
		if err != nil {
			t.Fatalf("ParseSchedule(%q) = %v", s, err)
		}
		replay := NewReplay(t0, parsed)
		if diff := cmp.Diff(order, lanes(t, replay, 3, "a", "b", "c")); diff != "" {
			t.Errorf("seed %d: replay of %q differs (-recorded +replayed):\n%s", seed, s, diff)
		}
		if diff := cmp.Diff(s, replay.Schedule()); diff != "" {
			t.Errorf("seed %d: the replay's schedule differs (-recorded +replayed):\n%s", seed, diff)
		}
	}
	if differs < 10 {
		t.Errorf("%d seeds of 20 departed from the oldest-first order; want most", differs)
	}
}

// A replayed choice beyond the units that may go wraps around, as a
// schedule recorded on a changed program may ask.
func TestInterleavedReplayWraps(t *testing.T) {
	f := NewReplay(t0, Schedule{{Step: 1, Index: 4}})
	order := lanes(t, f, 1, "a", "b", "c")
	if got, want := strings.Join(order, " "), "b0 a0 c0 timer0 timer1 timer2 timer3"; got != want {
		t.Errorf("order = %s; want %s", got, want)
	}
	if got, want := f.Schedule().String(), "1:1"; got != want {
		t.Errorf("Schedule() = %q; want %q", got, want)
	}
	if f.Turns() != 7 {
		t.Errorf("Turns() = %d; want 7", f.Turns())
	}
}

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Schedule
		err  string
	}{
		{text: "", want: nil},
		{text: " 3:1, 7:2 ", want: Schedule{{3, 1}, {7, 2}}},
		{text: "3", err: "not step:index"},
		{text: "0:1", err: "step \"0\""},
		{text: "3:0", err: "index \"0\""},
		{text: "3:x", err: "index \"x\""},
		{text: "7:1,3:1", err: "step 3 does not come after step 7"},
		{text: "3:1,3:2", err: "step 3 does not come after step 3"},
	} {
		got, err := ParseSchedule(tc.text)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSchedule(%q) error = %v; want one containing %q", tc.text, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSchedule(%q) = %v", tc.text, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseSchedule(%q) mismatch (-want +got):\n%s", tc.text, diff)
		}
		if got.String() != strings.ReplaceAll(strings.TrimSpace(tc.text), " ", "") {
			t.Errorf("ParseSchedule(%q).String() = %q", tc.text, got.String())
		}
	}
}

// The other clocks record nothing.
func TestScheduleOfOtherClocks(t *testing.T) {
	for _, f := range []*Fake{NewFake(t0), NewDeterministic(t0)} {
		lanes(t, f, 2, "a", "b")
		if s := f.Schedule(); s != nil {
			t.Errorf("Schedule() = %v; want nil", s)
		}
	}
}

// A unit of work that yields lets the others waiting go first, and goes
// on in a turn of its own; elsewhere Yield returns at once.
func TestYield(t *testing.T) {
	run := func(f *Fake) []string {
		var mu sync.Mutex
		var order []string
		ran := func(u string) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, u)
		}
		a, b := NewSource(f, "a"), NewSource(f, "b")
		var wa, wb Work
		runA := func() {
			ran("a: before")
			if err := Yield(context.Background(), f); err != nil {
				t.Errorf("Yield() = %v", err)
			}
			ran("a: after")
			wa.Done()
		}
		runB := func() { ran("b"); wb.Done() }
		// A release must not block: the work runs on a goroutine of its
		// own, as a component's worker would.
		var now bool
		if wa, now = a.Start(func() { go runA() }); now {
			go runA()
		}
		if wb, now = b.Start(func() { go runB() }); now {
			go runB()
		}
		settled(t, f)
		if busy := f.Busy(); busy != "" {
			t.Errorf("Busy() after Settle = %q", busy)
		}
		return order
	}
	// Oldest first, Yield does not yield.
	if got, want := strings.Join(run(NewDeterministic(t0)), ", "), "a: before, a: after, b"; got != want {
		t.Errorf("NewDeterministic: order %s; want %s", got, want)
	}
	// Replayed: at turn 2 the second of (b, a's continuation) goes.
	f := NewReplay(t0, Schedule{{Step: 2, Index: 1}})
	if got, want := strings.Join(run(f), ", "), "a: before, a: after, b"; got != want {
		t.Errorf("NewReplay(2:1): order %s; want %s", got, want)
	}
	f = NewReplay(t0, nil)
	if got, want := strings.Join(run(f), ", "), "a: before, b, a: after"; got != want {
		t.Errorf("NewReplay(nil): order %s; want %s", got, want)
	}
	if f.Turns() != 3 {
		t.Errorf("Turns() = %d; want 3 (a, b, a's continuation)", f.Turns())
	}
	if got := len(run(NewFake(t0))); got != 3 {
		t.Errorf("NewFake: %d units ran; want 3", got)
	}
}

// A Yield whose context ends before its turn returns the context's error
// and leaves nothing waiting: the caller's work goes on.
func TestYieldCancelled(t *testing.T) {
	f := NewReplay(t0, nil)
	w, _ := NewSource(f, "a").Start(func() {})
	// Take a's turn by hand: this goroutine does a's work.
	f.mu.Lock()
	h := f.popChosenLocked()
	f.mu.Unlock()
	if h == nil {
		t.Fatal("no turn to take")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Yield(ctx, f); !errors.Is(err, context.Canceled) {
		t.Errorf("Yield() = %v; want context.Canceled", err)
	}
	if got, want := f.Busy(), "1 running, 0 waiting for their turn, 0 sleeping: a ×1"; got != want {
		t.Errorf("Busy() after the cancelled Yield = %q; want %q", got, want)
	}
	w.Done()
	settled(t, f)
	if busy := f.Busy(); busy != "" {
		t.Errorf("Busy() after Settle = %q", busy)
	}
}
