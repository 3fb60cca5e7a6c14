package clock

import (
	"context"
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
