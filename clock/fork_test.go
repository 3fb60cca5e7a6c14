package clock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// forkRun hands a unit of work over on f whose worker forks three calls
// that sleep 3s, 1s and 2s of virtual time, and returns, once the clock has
// moved past them, what happened: each call's wake-up time, then the
// worker's time after the fork.
func forkRun(t *testing.T, f *Fake) []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
	}
	start := f.Now()
	var w Work
	worker := func() {
		Fork(f, 3, func(i int) {
			d := []time.Duration{3 * time.Second, time.Second, 2 * time.Second}[i]
			if err := Sleep(context.Background(), f, d); err != nil {
				t.Errorf("Sleep() = %v", err)
			}
			note(fmt.Sprintf("call %d awake at +%v", i, f.Now().Sub(start)))
		})
		note(fmt.Sprintf("worker goes on at +%v", f.Now().Sub(start)))
		w.Done()
	}
	var now bool
	if w, now = NewSource(f, "worker").Start(func() { go worker() }); now {
		go worker()
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 4
	}
	if err := f.RunUntil(context.Background(), done, time.Minute); err != nil {
		t.Fatalf("RunUntil() = %v", err)
	}
	if busy := f.Busy(); busy != "" {
		t.Errorf("Busy() after the fork = %q; want nothing", busy)
	}
	return got
}

// Virtual time is exact through a fork on every fake clock: each call
// wakes when its sleep ends, and the worker goes on when the last has.
func TestForkKeepsTimeExact(t *testing.T) {
	want := []string{"call 1 awake at +1s", "call 2 awake at +2s", "call 0 awake at +3s", "worker goes on at +3s"}
	for name, f := range map[string]*Fake{
		"concurrent":    NewFake(t0),
		"deterministic": NewDeterministic(t0),
		"interleaved":   NewInterleaved(t0, Interleaving{Seed: 1, Rate: 1}),
	} {
		got := forkRun(t, f)
		if name == "deterministic" {
			// One call after another: each sleeps in turn.
			want := []string{"call 0 awake at +3s", "call 1 awake at +4s", "call 2 awake at +6s", "worker goes on at +6s"}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %q; want %q", name, got, want)
			}
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q; want %q", name, got, want)
		}
	}
}

// On an interleaving clock the calls of a fork go in an order the seed
// draws, and a replay of the schedule takes it again.
func TestForkInterleaves(t *testing.T) {
	run := func(f *Fake) string {
		var order []string
		var w Work
		worker := func() {
			Fork(f, 4, func(i int) { order = append(order, fmt.Sprint(i)) }) // one call at a time
			order = append(order, "worker")
			w.Done()
		}
		w, _ = NewSource(f, "worker").Start(func() { go worker() })
		settled(t, f)
		return strings.Join(order, " ")
	}
	orders := map[string]bool{}
	for seed := range uint64(20) {
		f := NewInterleaved(t0, Interleaving{Seed: seed, Rate: 1})
		got := run(f)
		if !strings.HasSuffix(got, "worker") {
			t.Errorf("seed %d: order %s; want the worker last", seed, got)
		}
		orders[got] = true
		if again := run(NewReplay(t0, f.Schedule())); again != got {
			t.Errorf("seed %d: replay of %q ran %s; want %s", seed, f.Schedule(), again, got)
		}
	}
	if len(orders) < 5 {
		t.Errorf("20 seeds ran the calls in %d orders: %v; want more", len(orders), orders)
	}
}

func TestForkOnOtherClocks(t *testing.T) {
	var mu sync.Mutex
	n := 0
	Fork(Real{}, 5, func(int) {
		mu.Lock()
		n++
		mu.Unlock()
	})
	Fork(Real{}, 0, func(int) { t.Error("called for n = 0") })
	if n != 5 {
		t.Errorf("Fork(Real{}, 5) made %d calls; want 5", n)
	}
}
