package clock

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeTimerFiresOnlyWhenDue(t *testing.T) {
	fc := NewFake(t0)
	tm := fc.NewTimer(5 * time.Second)
	fc.Step(4 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("timer fired 1s early")
	default:
	}
	if got := fc.Waiters(); got != 1 {
		t.Fatalf("Waiters() = %d; want 1", got)
	}
	fc.Step(time.Second)
	select {
	case got := <-tm.C():
		if want := t0.Add(5 * time.Second); !got.Equal(want) {
			t.Fatalf("fired at %v; want %v", got, want)
		}
	default:
		t.Fatal("timer did not fire when due")
	}
	if tm.Stop() {
		t.Error("Stop() on a fired timer = true; want false")
	}
}

func TestFakeStopAndImmediate(t *testing.T) {
	fc := NewFake(t0)
	tm := fc.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop() on a pending timer = false; want true")
	}
	fc.Step(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
	now := fc.NewTimer(0)
	select {
	case <-now.C():
	default:
		t.Fatal("zero-duration timer did not fire at once")
	}
}

func TestFakeNextDeadline(t *testing.T) {
	fc := NewFake(t0)
	if _, ok := fc.NextDeadline(); ok {
		t.Fatal("NextDeadline() on an idle clock reported a deadline")
	}
	fc.NewTimer(3 * time.Second)
	fc.NewTimer(time.Second)
	got, ok := fc.NextDeadline()
	if !ok || !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("NextDeadline() = %v, %v; want %v, true", got, ok, t0.Add(time.Second))
	}
	if now := fc.Since(t0); now != 0 {
		t.Fatalf("Since(t0) = %v; want 0", now)
	}
}

func TestOrReal(t *testing.T) {
	if _, ok := OrReal(nil).(Real); !ok {
		t.Error("OrReal(nil) is not Real")
	}
	fc := NewFake(t0)
	if OrReal(fc) != Clock(fc) {
		t.Error("OrReal(fake) did not return the fake")
	}
}
