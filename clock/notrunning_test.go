package clock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
)

// Work that waits for a component never started ends a settle with an
// error naming the component, instead of a wait without end; once the
// component runs, the same work settles.
func TestSettleNamesAComponentNeverStarted(t *testing.T) {
	for _, deterministic := range []bool{false, true} {
		fc := clock.NewFake(time.Unix(0, 0))
		if deterministic {
			fc = clock.NewDeterministic(time.Unix(0, 0))
		}
		src := clock.NewSource(fc, "informer *v1.Pod")
		src.Expect()
		w, now := src.Start(func() {})
		_ = now
		err := fc.Settle(context.Background())
		if !errors.Is(err, clock.ErrNotRunning) || !strings.Contains(err.Error(), "informer *v1.Pod") {
			t.Fatalf("deterministic %t: Settle() = %v; want ErrNotRunning naming the informer", deterministic, err)
		}
		src.Running()
		done := make(chan error)
		go func() { done <- fc.Settle(context.Background()) }()
		w.Done()
		if err := <-done; err != nil {
			t.Errorf("deterministic %t: Settle() after Running and Done = %v; want nil", deterministic, err)
		}
	}
}

// A context that ends before the grace still names the component.
func TestSettleContextEndNamesAComponentNeverStarted(t *testing.T) {
	fc := clock.NewFake(time.Unix(0, 0))
	src := clock.NewSource(fc, "memcluster: kubelet")
	src.Expect()
	w, _ := src.Start(func() {})
	defer w.Done()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := fc.Settle(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "never started: memcluster: kubelet") {
		t.Errorf("Settle(ended context) = %v; want context.Canceled naming the kubelet", err)
	}
}
