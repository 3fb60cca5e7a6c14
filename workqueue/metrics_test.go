package workqueue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// metricsRecorder records the calls a queue makes to its Metrics hook.
type metricsRecorder struct {
	mu    sync.Mutex
	calls []string
}

var _ workqueue.Metrics = (*metricsRecorder)(nil)

func (m *metricsRecorder) record(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, fmt.Sprintf(format, args...))
}

func (m *metricsRecorder) Added(depth int) { m.record("added depth=%d", depth) }
func (m *metricsRecorder) Started(depth int, wait time.Duration) {
	m.record("started depth=%d wait=%v", depth, wait)
}
func (m *metricsRecorder) Finished(depth int, work time.Duration) {
	m.record("finished depth=%d work=%v", depth, work)
}
func (m *metricsRecorder) Retried() { m.record("retried") }

func (m *metricsRecorder) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls
	m.calls = nil
	return c
}

func TestMetrics(t *testing.T) {
	fc := clock.NewFake(t0)
	m := &metricsRecorder{}
	q := workqueue.New(workqueue.Config[string]{Clock: fc, Metrics: m})
	defer q.ShutDown()

	q.Add("a")
	q.Add("b")
	q.Add("a") // coalesced: not reported
	fc.Step(time.Second)
	a, _ := q.Get()
	fc.Step(2 * time.Second)
	q.Add("a") // while processing: pending, but not in Len until Done
	fc.Step(time.Second)
	q.Done(a)
	want := []string{
		"added depth=1",
		"added depth=2",
		"started depth=1 wait=1s",
		"added depth=1",
		"finished depth=2 work=3s",
	}
	if diff := cmp.Diff(want, m.take()); diff != "" {
		t.Errorf("calls for add/get/done mismatch (-want +got):\n%s", diff)
	}

	b, _ := q.Get()
	a, _ = q.Get()
	fc.Step(4 * time.Second)
	total, longest := q.Unfinished()
	if total != 8*time.Second || longest != 4*time.Second {
		t.Errorf("Unfinished() = %v, %v; want 8s, 4s", total, longest)
	}
	q.Done(b)
	q.Done(a)
	want = []string{
		"started depth=1 wait=4s",
		"started depth=0 wait=1s",
		"finished depth=0 work=4s",
		"finished depth=0 work=4s",
	}
	if diff := cmp.Diff(want, m.take()); diff != "" {
		t.Errorf("calls for two in flight mismatch (-want +got):\n%s", diff)
	}

	q.AddAfter("c", time.Second)
	stepToNext(t, fc)
	q.Get()
	q.AddRateLimited("d")
	stepToNext(t, fc) // d, after the default 5ms
	q.Get()
	want = []string{
		"retried", "added depth=1", "started depth=0 wait=0s",
		"retried", "added depth=1", "started depth=0 wait=0s",
	}
	if diff := cmp.Diff(want, m.take()); diff != "" {
		t.Errorf("calls for delayed adds mismatch (-want +got):\n%s", diff)
	}
}

// unfinishedRecorder is a Metrics hook that also takes the queue's
// Unfinished method.
type unfinishedRecorder struct {
	metricsRecorder
	read func() (total, longest time.Duration)
}

var _ workqueue.UnfinishedMetrics = (*unfinishedRecorder)(nil)

func (u *unfinishedRecorder) Unfinished(read func() (total, longest time.Duration)) { u.read = read }

// New hands a hook implementing UnfinishedMetrics the queue's Unfinished
// method, so that the hook reads the work in progress on its own.
func TestUnfinishedMetrics(t *testing.T) {
	fc := clock.NewFake(t0)
	m := &unfinishedRecorder{}
	q := workqueue.New(workqueue.Config[string]{Clock: fc, Metrics: m})
	defer q.ShutDown()
	if m.read == nil {
		t.Fatal("New did not hand the hook the queue's Unfinished")
	}
	q.Add("a")
	q.Add("b")
	q.Get()
	fc.Step(2 * time.Second)
	q.Get()
	fc.Step(time.Second)
	if total, longest := m.read(); total != 4*time.Second || longest != 3*time.Second {
		t.Errorf("read() = %v, %v; want 4s, 3s", total, longest)
	}
}

func TestUnfinishedWithoutMetrics(t *testing.T) {
	q, fc := newFakeQueue(t)
	q.Add("a")
	q.Get()
	fc.Step(time.Second)
	if total, longest := q.Unfinished(); total != 0 || longest != 0 {
		t.Errorf("Unfinished() without Metrics = %v, %v; want 0, 0", total, longest)
	}
}
