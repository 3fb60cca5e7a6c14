package clock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// settled runs f.Settle and fails the test if it returns an error.
func settled(t *testing.T, f *Fake) {
	t.Helper()
	if err := f.Settle(context.Background()); err != nil {
		t.Fatalf("Settle() = %v", err)
	}
}

func TestSettleWaitsForConcurrentWork(t *testing.T) {
	f := NewFake(t0)
	src := NewSource(f, "test")
	w, now := src.Start(nil)
	if !now {
		t.Fatal("Start on a concurrent clock: now = false; want true")
	}
	var done sync.WaitGroup
	finished := false
	done.Go(func() {
		finished = true // before Done: Settle must see it
		w.Done()
	})
	settled(t, f)
	if !finished {
		t.Error("Settle returned before the work was done")
	}
	done.Wait()
	if b := f.Busy(); b != "" {
		t.Errorf("Busy() after Settle = %q; want \"\"", b)
	}
}

func TestDeterministicTurns(t *testing.T) {
	f := NewDeterministic(t0)
	src := NewSource(f, "test")
	var order []string
	var works []Work
	for _, name := range []string{"a", "b", "c"} {
		var w Work
		w, now := src.Start(func() {
			order = append(order, name)
			// The work runs alone: the next turn waits for this Done.
			if got := f.Busy(); !strings.HasPrefix(got, "1 running") {
				order = append(order, "busy: "+got)
			}
			w.Done()
		})
		if now {
			t.Fatal("Start on a deterministic clock: now = true; want false")
		}
		works = append(works, w)
	}
	if !works[1].Pending() {
		t.Error("Pending() before Settle = false; want true")
	}
	works[1].Done() // withdrawn: its release never runs
	settled(t, f)
	if got, want := strings.Join(order, ","), "a,c"; got != want {
		t.Errorf("turns ran %q; want %q", got, want)
	}
}

func TestDoneTwicePanics(t *testing.T) {
	f := NewFake(t0)
	w, _ := NewSource(f, "queue x").Start(nil)
	w.Done()
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, `"queue x"`) {
			t.Errorf("second Done panicked with %q; want a message naming the source", r)
		}
	}()
	w.Done()
}

func TestNilSourceTracksNothing(t *testing.T) {
	src := NewSource(Real{}, "test")
	if src != nil {
		t.Fatal("NewSource(Real{}) != nil")
	}
	w, now := src.Start(func() { t.Error("release called for a nil source") })
	if !now {
		t.Error("Start on a nil source: now = false")
	}
	w.Done()
	src.Begin().Done()
}

func TestAfterFuncRunsBeforeStepReturns(t *testing.T) {
	f := NewFake(t0)
	var got []string
	f.AfterFunc(2*time.Second, func() { got = append(got, "b@2s") })
	f.AfterFunc(time.Second, func() { got = append(got, "a@1s") })
	f.AfterFunc(2*time.Second, func() { got = append(got, "c@2s") })
	stopped := f.AfterFunc(time.Second, func() { got = append(got, "stopped") })
	if !stopped.Stop() {
		t.Error("Stop() of a pending AfterFunc = false")
	}
	f.Step(2 * time.Second)
	if want := "a@1s,b@2s,c@2s"; strings.Join(got, ",") != want {
		t.Errorf("callbacks ran %q; want %q (by deadline, then creation)", strings.Join(got, ","), want)
	}
	if stopped.Stop() {
		t.Error("second Stop() = true")
	}
}

func TestAfterFuncDeterministicWaitsForTurn(t *testing.T) {
	f := NewDeterministic(t0)
	ran := 0
	t1 := f.AfterFunc(time.Second, func() { ran++ })
	t2 := f.AfterFunc(time.Second, func() { ran += 10 })
	f.Step(time.Second)
	if ran != 0 {
		t.Fatalf("callbacks ran in Step on a deterministic clock (ran=%d)", ran)
	}
	if !t2.Stop() {
		t.Error("Stop() of a fired callback whose turn has not come = false; want true")
	}
	settled(t, f)
	if ran != 1 {
		t.Errorf("ran = %d after Settle; want 1 (t2 was stopped)", ran)
	}
	if t1.Stop() {
		t.Error("Stop() after the callback ran = true")
	}
}

func TestRunUntilMovesTimeOnlyWhenIdle(t *testing.T) {
	f := NewFake(t0)
	src := NewSource(f, "worker")
	var mu sync.Mutex
	var log []string
	record := func(s string) {
		mu.Lock()
		log = append(log, fmt.Sprintf("%s@%v", s, f.Since(t0)))
		mu.Unlock()
	}
	// A chain: a timer hands work to a goroutine, which sets the next
	// timer only after a slow computation. Time must wait for it.
	var step func(n int)
	step = func(n int) {
		w, _ := src.Start(nil)
		go func() {
			defer w.Done()
			for range 1000 { // a slow worker: others run meanwhile
				runtime.Gosched()
			}
			record(fmt.Sprint("step", n))
			if n < 3 {
				f.AfterFunc(time.Second, func() { step(n + 1) })
			}
		}()
	}
	f.AfterFunc(time.Second, func() { step(1) })
	err := f.RunUntil(context.Background(), func() bool { return len(log) == 3 }, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(log, " "), "step1@1s step2@2s step3@3s"; got != want {
		t.Errorf("log = %q; want %q", got, want)
	}
}

func TestRunUntilErrors(t *testing.T) {
	f := NewFake(t0)
	never := func() bool { return false }
	if err := f.RunUntil(context.Background(), never, time.Hour); !errors.Is(err, ErrStalled) {
		t.Errorf("RunUntil with nothing to do = %v; want ErrStalled", err)
	}
	f.AfterFunc(2*time.Hour, func() {})
	if err := f.RunUntil(context.Background(), never, time.Hour); !errors.Is(err, ErrTimeLimit) {
		t.Errorf("RunUntil with a timer beyond the limit = %v; want ErrTimeLimit", err)
	}
	// Work that never finishes: RunUntil waits for it until ctx ends and
	// says what it is.
	NewSource(f, `workqueue "stuck"`).Start(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := f.RunUntil(ctx, never, time.Hour)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `workqueue "stuck" ×1`) {
		t.Errorf("RunUntil with stuck work = %v; want context.Canceled naming the work", err)
	}
}

func TestSleepIsIdleTime(t *testing.T) {
	for _, deterministic := range []bool{false, true} {
		t.Run(fmt.Sprint("deterministic=", deterministic), func(t *testing.T) {
			f := newFake(t0, deterministic)
			src := NewSource(f, "sleeper")
			var woke time.Duration
			turn := make(chan struct{})
			w, now := src.Start(func() { close(turn) })
			if now {
				close(turn)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer w.Done()
				<-turn
				if err := Sleep(context.Background(), f, 90*time.Second); err != nil {
					t.Error(err)
				}
				woke = f.Since(t0)
			}()
			err := f.RunUntil(context.Background(), func() bool {
				select {
				case <-done:
					return true
				default:
					return false
				}
			}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if woke != 90*time.Second {
				t.Errorf("Sleep(90s) woke at +%v", woke)
			}
		})
	}
}

func TestSleepCancelled(t *testing.T) {
	f := NewFake(t0)
	w, _ := NewSource(f, "sleeper").Start(nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Sleep(ctx, f, time.Minute) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep = %v; want context.Canceled", err)
	}
	// The sleeper counts as running again: its work is not finished.
	if got := f.Busy(); !strings.HasPrefix(got, "1 running, 0 waiting for their turn, 0 sleeping") {
		t.Errorf("Busy() after a cancelled Sleep = %q", got)
	}
	w.Done()
	settled(t, f)
}
