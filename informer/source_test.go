package informer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
)

// The informers of these tests run on a clock.Fake and read fake watches
// whose events are tracked work (internal/fakewatch), so the tests wait
// exactly: for what the informer must do at the current instant, or, when
// the clock settles first, for nothing, because then nothing will happen
// until the test acts. No wait has a wall-clock timeout.

// script is a ListWatcher driven step by step by the test: each List and
// Watch call blocks until the test answers it. The informer is busy (its
// work is not finished) while it calls them.
type script struct {
	fc      *clock.Fake
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

// newScript returns a script for an informer on fc, which may be nil for
// an informer that is never run past its configuration checks.
func newScript(fc *clock.Fake) *script {
	return &script{fc: fc, lists: make(chan listReply), watches: make(chan watchCall)}
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

// settling runs fc.Settle on its own goroutine. The channel it returns is
// closed when Settle returns nil: no work is left at the current instant,
// so whatever the informer was to do at this instant is done, and nothing
// more will happen until the test acts. stop ends the wait.
func settling(t *testing.T, fc *clock.Fake) (idle <-chan struct{}, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		if fc.Settle(ctx) == nil {
			close(done)
		}
	}()
	return done, cancel
}

// settle lets the work of the current instant finish.
func settle(t *testing.T, fc *clock.Fake) {
	t.Helper()
	if err := fc.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// recv receives from ch a value that the informer's tracked work sends
// (a handler call, an error report, a call of the script). It fails the
// test if the clock settles first: then nothing will send it.
func recv[V any](t *testing.T, fc *clock.Fake, ch <-chan V, what string) V {
	t.Helper()
	select {
	case v := <-ch:
		return v
	default:
	}
	idle, stop := settling(t, fc)
	defer stop()
	select {
	case v := <-ch:
		return v
	case <-idle:
		// A value sent just before the work finished is in the buffer.
		select {
		case v := <-ch:
			return v
		default:
		}
		t.Fatalf("%s: the clock settled without it", what)
		var zero V
		return zero
	}
}

// answerList answers the next List call. A Watch call instead, or a
// clock that settles first, fails the test.
func (s *script) answerList(t *testing.T, r listReply) {
	t.Helper()
	idle, stop := settling(t, s.fc)
	defer stop()
	select {
	case s.lists <- r:
	case call := <-s.watches:
		call.reply <- watchReply{err: errors.New("unexpected Watch")}
		t.Fatalf("informer called Watch(%q); want List", call.rv)
	case <-idle:
		t.Fatal("informer did not call List: the clock settled")
	}
}

// acceptWatch answers the next Watch call, which must ask for wantRV, with
// a new fake watch, whose events are tracked work on the script's clock.
func (s *script) acceptWatch(t *testing.T, wantRV string) *fakewatch.Watch {
	t.Helper()
	fw := fakewatch.New(s.fc, "script watch")
	s.answerWatch(t, wantRV, watchReply{w: fw})
	return fw
}

// answerWatch answers the next Watch call, which must ask for wantRV. A
// List call instead, or a clock that settles first, fails the test.
func (s *script) answerWatch(t *testing.T, wantRV string, r watchReply) {
	t.Helper()
	idle, stop := settling(t, s.fc)
	defer stop()
	select {
	case call := <-s.watches:
		if call.rv != wantRV {
			t.Errorf("Watch(resourceVersion %q); want %q", call.rv, wantRV)
		}
		call.reply <- r
	case s.lists <- listReply{err: errors.New("unexpected List")}:
		t.Fatalf("informer called List; want Watch(%q)", wantRV)
	case <-idle:
		t.Fatalf("informer did not call Watch(%q): the clock settled", wantRV)
	}
}

// recorder is a Handler that describes each call as a line of text. Its
// informer runs on fc.
type recorder struct {
	fc    *clock.Fake
	lines chan string
}

func newRecorder(fc *clock.Fake) *recorder {
	return &recorder{fc: fc, lines: make(chan string, 1000)}
}

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

// expect receives len(want) lines and compares them with want, then
// checks that no other call has been made.
func (r *recorder) expect(t *testing.T, want ...string) {
	t.Helper()
	got := make([]string, 0, len(want))
	for range want {
		got = append(got, recv(t, r.fc, r.lines, fmt.Sprintf("handler calls: got %q, then nothing; want %q", got, want)))
	}
	for len(r.lines) > 0 {
		got = append(got, <-r.lines)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("handler calls:\n got %q\nwant %q", got, want)
	}
}

// expectNone lets the clock settle and checks that no call has been made.
func (r *recorder) expectNone(t *testing.T) {
	t.Helper()
	settle(t, r.fc)
	select {
	case l := <-r.lines:
		t.Errorf("unexpected handler call %q", l)
	default:
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
		if err := <-errc; err != nil {
			t.Errorf("Run() = %v; want nil after cancel", err)
		}
	})
}

// waitClosed waits for ch, which the informer's work closes, to be closed.
func waitClosed(t *testing.T, fc *clock.Fake, what string, ch <-chan struct{}) {
	t.Helper()
	recv(t, fc, ch, what+" did not happen")
}

// waitForTimers lets the clock settle and checks that n timers are
// pending on fc: the goroutines under test are blocked on the clock.
func waitForTimers(t *testing.T, fc *clock.Fake, n int) {
	t.Helper()
	settle(t, fc)
	if got := fc.Waiters(); got != n {
		t.Fatalf("pending timers = %d; want %d", got, n)
	}
}

// errorLog collects the errors passed to Config.OnError by an informer on
// fc.
type errorLog struct {
	fc *clock.Fake
	ch chan error
}

func newErrorLog(fc *clock.Fake) errorLog { return errorLog{fc: fc, ch: make(chan error, 100)} }

func (e errorLog) record(err error) { e.ch <- err }

func (e errorLog) expect(t *testing.T, substr string) {
	t.Helper()
	err := recv(t, e.fc, e.ch, fmt.Sprintf("OnError was not called; want an error containing %q", substr))
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("OnError(%q); want an error containing %q", err, substr)
	}
}

// expectNone lets the clock settle and checks that OnError has not been
// called.
func (e errorLog) expectNone(t *testing.T) {
	t.Helper()
	settle(t, e.fc)
	select {
	case err := <-e.ch:
		t.Fatalf("unexpected OnError(%q)", err)
	default:
	}
}
