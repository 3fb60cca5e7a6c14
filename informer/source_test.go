package informer_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
)

// failAfter bounds every wait in these tests. It is a safety net that turns
// a hang into a failure; no test relies on time passing.
const failAfter = 10 * time.Second

// script is a ListWatcher driven step by step by the test: each List and
// Watch call blocks until the test answers it.
type script struct {
	lists   chan listReply
	watches chan watchCall
}

type listReply struct {
	items []*corev1.Pod
	rv    string
	err   error
}

type watchCall struct {
	rv    string
	reply chan watchReply
}

type watchReply struct {
	w   watch.Interface
	err error
}

var _ informer.ListWatcher[*corev1.Pod] = (*script)(nil)

func newScript() *script {
	return &script{lists: make(chan listReply), watches: make(chan watchCall)}
}

func (s *script) List(ctx context.Context) ([]*corev1.Pod, string, error) {
	select {
	case r := <-s.lists:
		return r.items, r.rv, r.err
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

func (s *script) Watch(ctx context.Context, rv string) (watch.Interface, error) {
	call := watchCall{rv: rv, reply: make(chan watchReply, 1)}
	select {
	case s.watches <- call:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r := <-call.reply
	return r.w, r.err
}

// answerList answers the next List call.
func (s *script) answerList(t *testing.T, r listReply) {
	t.Helper()
	select {
	case s.lists <- r:
	case <-time.After(failAfter):
		t.Fatal("informer did not call List")
	}
}

// acceptWatch answers the next Watch call, which must ask for wantRV, with
// a new fake watcher.
func (s *script) acceptWatch(t *testing.T, wantRV string) *watch.FakeWatcher {
	t.Helper()
	fw := watch.NewFake()
	s.answerWatch(t, wantRV, watchReply{w: fw})
	return fw
}

func (s *script) answerWatch(t *testing.T, wantRV string, r watchReply) {
	t.Helper()
	select {
	case call := <-s.watches:
		if call.rv != wantRV {
			t.Errorf("Watch(resourceVersion %q); want %q", call.rv, wantRV)
		}
		call.reply <- r
	case <-time.After(failAfter):
		t.Fatalf("informer did not call Watch(%q)", wantRV)
	}
}

// send delivers one event; it returns once the informer has received it.
func send(t *testing.T, fw *watch.FakeWatcher, typ watch.EventType, obj kruntime.Object) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		fw.Action(typ, obj)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(failAfter):
		t.Fatalf("informer did not receive the %s event", typ)
	}
}

// recorder is a Handler that describes each call as a line of text.
type recorder struct{ lines chan string }

func newRecorder() *recorder { return &recorder{lines: make(chan string, 1000)} }

func (r *recorder) handler() informer.Handler[*corev1.Pod] {
	return informer.Handler[*corev1.Pod]{
		OnAdd: func(p *corev1.Pod) { r.lines <- fmt.Sprintf("add %s/%s@%s", p.Namespace, p.Name, p.ResourceVersion) },
		OnUpdate: func(old, cur *corev1.Pod) {
			same := ""
			if old == cur {
				same = " (same object)"
			}
			r.lines <- fmt.Sprintf("update %s/%s@%s->%s%s", cur.Namespace, cur.Name, old.ResourceVersion, cur.ResourceVersion, same)
		},
		OnDelete: func(d informer.Deleted[*corev1.Pod]) {
			kind := "delete"
			if d.FinalStateUnknown {
				kind = "tombstone"
			}
			if d.Key != nn(d.Obj.Namespace, d.Obj.Name) {
				r.lines <- fmt.Sprintf("bad key %s for %s/%s", d.Key, d.Obj.Namespace, d.Obj.Name)
			}
			r.lines <- fmt.Sprintf("%s %s/%s@%s", kind, d.Key.Namespace, d.Key.Name, d.Obj.ResourceVersion)
		},
	}
}

// expect receives len(want) lines and compares them with want.
func (r *recorder) expect(t *testing.T, want ...string) {
	t.Helper()
	got := make([]string, 0, len(want))
	for range want {
		select {
		case l := <-r.lines:
			got = append(got, l)
		case <-time.After(failAfter):
			t.Fatalf("handler calls: got %q, then nothing; want %q", got, want)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("handler calls:\n got %q\nwant %q", got, want)
	}
}

// start runs inf until the test ends, then checks that Run returned nil.
func start(t *testing.T, inf *informer.Informer[*corev1.Pod]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("Run() = %v; want nil after cancel", err)
			}
		case <-time.After(failAfter):
			t.Error("Run did not return after cancel")
		}
	})
}

// waitClosed waits for ch to be closed.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(failAfter):
		t.Fatalf("%s did not happen", what)
	}
}

// waitForTimers waits until n timers are pending on fc, that is, until the
// goroutines under test are blocked on the clock.
func waitForTimers(t *testing.T, fc *clock.Fake, n int) {
	t.Helper()
	deadline := time.Now().Add(failAfter)
	for fc.Waiters() != n {
		if time.Now().After(deadline) {
			t.Fatalf("pending timers = %d; want %d", fc.Waiters(), n)
		}
		runtime.Gosched()
	}
}

// errorLog collects the errors passed to Config.OnError.
type errorLog chan error

func (e errorLog) record(err error) { e <- err }

func (e errorLog) expect(t *testing.T, substr string) {
	t.Helper()
	select {
	case err := <-e:
		if !strings.Contains(err.Error(), substr) {
			t.Fatalf("OnError(%q); want an error containing %q", err, substr)
		}
	case <-time.After(failAfter):
		t.Fatalf("OnError was not called; want an error containing %q", substr)
	}
}

func (e errorLog) expectNone(t *testing.T) {
	t.Helper()
	select {
	case err := <-e:
		t.Fatalf("unexpected OnError(%q)", err)
	default:
	}
}
