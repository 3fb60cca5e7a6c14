package fakewatch_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
	"github.com/ctrlkit/ctrlkit/internal/watchproto"
)

var (
	t0                       = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_  watchproto.AckWatcher = (*fakewatch.Watch)(nil)
)

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func settle(t *testing.T, fc *clock.Fake) {
	t.Helper()
	if err := fc.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// An informer reading fake watches: once the clock has settled, its
// handler has seen every event fed, and every end of a watch has led to
// the next watch (or list), with no waiting in wall-clock time.
func TestInformerSettles(t *testing.T) {
	for _, deterministic := range []bool{false, true} {
		t.Run(fmt.Sprint("deterministic=", deterministic), func(t *testing.T) {
			fc := clock.NewFake(t0)
			if deterministic {
				fc = clock.NewDeterministic(t0)
			}
			var (
				mu      sync.Mutex
				seen    []string
				lists   int
				watches []*fakewatch.Watch
			)
			lw := informer.ListWatchFuncs[*corev1.Pod]{
				ListFunc: func(context.Context) ([]*corev1.Pod, string, error) {
					mu.Lock()
					defer mu.Unlock()
					lists++
					return nil, "1", nil
				},
				WatchFunc: func(context.Context, string) (watch.Interface, error) {
					mu.Lock()
					defer mu.Unlock()
					w := fakewatch.New(fc, "pods")
					watches = append(watches, w)
					return w, nil
				},
			}
			inf := informer.New(lw, informer.Config[*corev1.Pod]{Clock: fc})
			if _, err := inf.AddHandler(informer.Handler[*corev1.Pod]{
				OnAdd:    func(p *corev1.Pod) { mu.Lock(); seen = append(seen, "add "+p.Name); mu.Unlock() },
				OnUpdate: func(_, p *corev1.Pod) { mu.Lock(); seen = append(seen, "update "+p.Name); mu.Unlock() },
			}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			wg.Go(func() { _ = inf.Run(ctx) })

			check := func(step string, wantLists, wantWatches int, want ...string) *fakewatch.Watch {
				t.Helper()
				settle(t, fc)
				mu.Lock()
				defer mu.Unlock()
				if lists != wantLists || len(watches) != wantWatches || !slices.Equal(seen, want) {
					t.Fatalf("%s: %d lists, %d watches, handler saw %q; want %d, %d, %q", step, lists, len(watches), seen, wantLists, wantWatches, want)
				}
				if busy := fc.Busy(); busy != "" {
					t.Fatalf("%s: work left after Settle: %s", step, busy)
				}
				return watches[len(watches)-1]
			}
			w := check("start", 1, 1)
			w.Add(pod("a", "2"))
			w.Modify(pod("a", "3"))
			w.Add(pod("b", "4"))
			w = check("events", 1, 1, "add a", "update a", "add b")
			w.Close() // watched again from the last version, without a list
			w = check("closed", 1, 2, "add a", "update a", "add b")
			w.Add(pod("c", "5"))
			w.Error(&apierrors.NewResourceExpired("too old").ErrStatus) // listed again
			w.Add(pod("d", "6"))                                        // after the end: dropped
			check("expired", 2, 3, "add a", "update a", "add b", "add c")
			for i, w := range watches[:2] {
				if !w.Stopped() {
					t.Errorf("watch %d was not stopped", i)
				}
			}
		})
	}
}

// A consumer that does not call AckEvents finishes an event's work by
// receiving it; the end of the watch is work until Stop.
func TestWithoutAcks(t *testing.T) {
	fc := clock.NewFake(t0)
	w := fakewatch.New(fc, "plain")
	w.Add(pod("a", "1"))
	w.Close()
	w.Add(pod("b", "2")) // after the end: dropped
	var got []string
	for ev := range w.ResultChan() {
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.(*corev1.Pod).Name))
	}
	if want := []string{"ADDED a"}; !slices.Equal(got, want) {
		t.Errorf("received %q; want %q", got, want)
	}
	if busy := fc.Busy(); busy == "" {
		t.Error("no work tracked for the end of the watch before Stop")
	}
	w.Stop()
	settle(t, fc)
}

// The end of a watch that ends before its consumer calls AckEvents is
// work until Stop: an informer that has received the watch from Watch
// but not yet started reading it keeps the clock from settling without
// it.
func TestEndBeforeAckEvents(t *testing.T) {
	fc := clock.NewFake(t0)
	w := fakewatch.New(fc, "ended early")
	w.Close()
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("event on a closed watch")
	}
	w.AckEvents()
	if busy := fc.Busy(); busy == "" {
		t.Error("the end of the watch was finished before Stop")
	}
	w.Stop()
	settle(t, fc)
}

// Stop finishes the work of what was never received, and what is fed
// afterwards is not work.
func TestStopFinishesWork(t *testing.T) {
	fc := clock.NewFake(t0)
	w := fakewatch.New(fc, "stopped")
	w.AckEvents()
	w.Add(pod("a", "1"))
	w.Add(pod("b", "2"))
	if ev := <-w.ResultChan(); ev.Object.(*corev1.Pod).Name != "a" {
		t.Fatalf("first event %v; want a", ev)
	}
	w.Stop()
	w.Add(pod("c", "3"))
	settle(t, fc)
	if _, ok := <-w.ResultChan(); ok {
		t.Error("channel open after Stop")
	}
}
