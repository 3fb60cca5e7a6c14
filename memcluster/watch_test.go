package memcluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
)

// settling runs fc.Settle on its own goroutine. The channel it returns is
// closed when Settle returns nil: no work is left at the current instant.
// A watch event that is due is such work until it is received, and so is
// the end of a watch that ends by itself until its channel is closed. stop
// ends the wait.
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

// nextEvent receives one event of w, a watch of a cluster on fc (ok is
// false when the channel is closed). It fails the test at once if the
// clock settles first: then no event is due on w and none will be until
// the test acts.
func nextEvent(t *testing.T, fc *clock.Fake, w watch.Interface) (ev watch.Event, ok bool) {
	t.Helper()
	select {
	case ev, ok = <-w.ResultChan():
		return ev, ok
	default:
	}
	idle, stop := settling(t, fc)
	defer stop()
	select {
	case ev, ok = <-w.ResultChan():
		return ev, ok
	case <-idle:
		// The close of a watch that ended by itself may have come with the
		// end of the work.
		select {
		case ev, ok = <-w.ResultChan():
			return ev, ok
		default:
		}
		t.Fatal("no watch event: the clock settled without one")
		return ev, false
	}
}

// next receives one event like nextEvent and describes it as "TYPE name"
// (or "TYPE rv" for bookmarks, "ERROR code reason" for errors, "CLOSED").
func next(t *testing.T, fc *clock.Fake, w watch.Interface) string {
	t.Helper()
	ev, ok := nextEvent(t, fc, w)
	if !ok {
		return "CLOSED"
	}
	return describe(ev)
}

func describe(ev watch.Event) string {
	switch o := ev.Object.(type) {
	case *metav1.Status:
		return line(ev.Type, o.Code, o.Reason)
	case metav1.Object:
		if ev.Type == watch.Bookmark {
			return line(ev.Type, o.GetResourceVersion())
		}
		return line(ev.Type, o.GetName())
	default:
		return line(ev.Type)
	}
}

func nextN(t *testing.T, fc *clock.Fake, w watch.Interface, n int) []string {
	t.Helper()
	var out []string
	for range n {
		out = append(out, next(t, fc, w))
	}
	return out
}

func TestWatchFromResourceVersion(t *testing.T) {
	c, fc := newTestCluster(t)
	pods := c.Pods("ns")
	must(pods.Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
	must(pods.Create(ctxT(t), pod("b", "", ""), metav1.CreateOptions{}))(t)
	_, rv, err := pods.List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(pods.Patch(ctxT(t), "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"1"}}}`), metav1.PatchOptions{}))(t)
	if err := pods.Delete(ctxT(t), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	must(pods.Create(ctxT(t), pod("c", "", ""), metav1.CreateOptions{}))(t)

	tests := []struct {
		name string
		rv   string
		want []string
	}{
		// A deleted pod is written with its deletionTimestamp first, as by kube-apiserver.
		{name: "from the list's version", rv: rv, want: []string{"MODIFIED a", "MODIFIED b", "DELETED b", "ADDED c"}},
		{name: "from empty: current state", rv: "", want: []string{"ADDED a", "ADDED c"}},
		{name: "from 0: current state", rv: "0", want: []string{"ADDED a", "ADDED c"}},
		{name: "from the start", rv: "1", want: []string{"ADDED a", "ADDED b", "MODIFIED a", "MODIFIED b", "DELETED b", "ADDED c"}}, // a fresh cluster's version
		{name: "from the first write", rv: "2", want: []string{"ADDED b", "MODIFIED a", "MODIFIED b", "DELETED b", "ADDED c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := must(pods.Watch(ctxT(t), metav1.ListOptions{ResourceVersion: tt.rv}))(t)
			defer w.Stop()
			if diff := cmp.Diff(tt.want, nextN(t, fc, w, len(tt.want))); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A watch from "" or "0" starts with the current objects, as ADDED
// events, in resourceVersion order: a client that resumes from the last
// version it received (its watch ended after the first) misses none of
// them. In name order, "a" (newer) would come first, and a watch resumed
// after it would never send "z".
func TestWatchFromZeroInVersionOrder(t *testing.T) {
	c, fc := newTestCluster(t)
	pods := c.Pods("ns")
	for _, name := range []string{"z", "a", "m"} {
		must(pods.Create(ctxT(t), pod(name, "", ""), metav1.CreateOptions{}))(t)
	}
	for _, rv := range []string{"", "0"} {
		w := must(pods.Watch(ctxT(t), metav1.ListOptions{ResourceVersion: rv}))(t)
		if diff := cmp.Diff([]string{"ADDED z", "ADDED a", "ADDED m"}, nextN(t, fc, w, 3)); diff != "" {
			t.Errorf("watch from %q: events mismatch (-want +got):\n%s", rv, diff)
		}
		w.Stop()
	}
}

func TestWatchExpired(t *testing.T) {
	fc := newFake()
	c := New(Config{Clock: fc, WatchHistory: 2})
	for _, name := range []string{"a", "b", "c", "d"} {
		must(c.Pods("ns").Create(ctxT(t), pod(name, "", ""), metav1.CreateOptions{}))(t)
	}
	tests := []struct {
		rv   string
		want []string
	}{
		{rv: "2", want: []string{"ERROR 410 Expired", "CLOSED"}},
		{rv: "3", want: []string{"ADDED c", "ADDED d"}},
		{rv: "99", want: []string{"ERROR 504 Timeout", "CLOSED"}},
	}
	for _, tt := range tests {
		t.Run("rv "+tt.rv, func(t *testing.T) {
			w := must(c.Pods("ns").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: tt.rv}))(t)
			defer w.Stop()
			if diff := cmp.Diff(tt.want, nextN(t, fc, w, len(tt.want))); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := c.Pods("ns").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "x"}); err == nil {
		t.Error("Watch() with an invalid resourceVersion succeeded")
	}
}

func TestWatchBookmarks(t *testing.T) {
	fc := newFake()
	c := New(Config{Clock: fc, BookmarkInterval: time.Minute})
	with := must(c.Pods("").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "0", AllowWatchBookmarks: true}))(t)
	defer with.Stop()
	without := must(c.Pods("").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "0"}))(t)
	defer without.Stop()

	must(c.Pods("ns").Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
	c.Bookmark()
	fc.Step(time.Minute)
	must(c.Pods("ns").Create(ctxT(t), pod("b", "", ""), metav1.CreateOptions{}))(t)

	// The periodic bookmark is enqueued when the timer fires, inside
	// fc.Step: before "b".
	want := []string{"ADDED a", "BOOKMARK 2", "BOOKMARK 2", "ADDED b"}
	if diff := cmp.Diff(want, nextN(t, fc, with, 4)); diff != "" {
		t.Errorf("with bookmarks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ADDED a", "ADDED b"}, nextN(t, fc, without, 2)); diff != "" {
		t.Errorf("without bookmarks (-want +got):\n%s", diff)
	}
}

func TestWatchSelectorTransitions(t *testing.T) {
	c, fc := newTestCluster(t)
	pods := c.Pods("ns")
	w := must(pods.Watch(ctxT(t), metav1.ListOptions{LabelSelector: "app=web"}))(t)
	defer w.Stop()
	p := pod("p", "", "")
	p.Labels = map[string]string{"app": "other"}
	must(pods.Create(ctxT(t), p, metav1.CreateOptions{}))(t)
	relabel := func(app string) {
		must(pods.Patch(ctxT(t), "p", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"`+app+`"}}}`), metav1.PatchOptions{}))(t)
	}
	relabel("web")
	relabel("other")
	must(pods.Create(ctxT(t), pod("sentinel", "", ""), metav1.CreateOptions{}))(t)
	want := []string{"ADDED p", "DELETED p", "ADDED sentinel"}
	if diff := cmp.Diff(want, nextN(t, fc, w, 3)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestWatchEnds(t *testing.T) {
	c, _ := newTestCluster(t)
	// The close after Stop or the end of the context is not work of the
	// clock: the watch's goroutine does it when it sees them, and the test
	// waits for it without a deadline.
	closed := func(t *testing.T, w watch.Interface) {
		t.Helper()
		for ev := range w.ResultChan() {
			t.Errorf("unexpected event %s", describe(ev))
		}
	}
	t.Run("Stop", func(t *testing.T) {
		w := must(c.Pods("").Watch(ctxT(t), metav1.ListOptions{}))(t)
		w.Stop()
		w.Stop()
		closed(t, w)
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctxT(t))
		w := must(c.Pods("").Watch(ctx, metav1.ListOptions{}))(t)
		cancel()
		closed(t, w)
	})
	t.Run("slow consumer", func(t *testing.T) {
		fc := newFake()
		c := New(Config{Clock: fc, WatchBuffer: 2})
		w := must(c.Pods("").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "0"}))(t)
		for _, name := range []string{"a", "b", "c", "d", "e"} {
			// Never blocks, although nobody reads the watch.
			must(c.Pods("ns").Create(ctxT(t), pod(name, "", ""), metav1.CreateOptions{}))(t)
		}
		// Terminated when the buffer was full (an event already on its
		// way may still come first).
		for next(t, fc, w) != "CLOSED" {
		}
	})
}

func TestListWatcherResumes(t *testing.T) {
	c, fc := newTestCluster(t)
	lw := c.Pods("ns").ListWatcher()
	must(c.Pods("ns").Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
	must(c.Pods("other").Create(ctxT(t), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{}))(t)
	items, rv, err := lw.List(ctxT(t))
	if err != nil || len(items) != 1 {
		t.Fatalf("List() = %d items, %v; want 1 item", len(items), err)
	}
	must(c.Pods("ns").Create(ctxT(t), pod("b", "", ""), metav1.CreateOptions{}))(t)
	w := must(lw.Watch(ctxT(t), rv))(t)
	defer w.Stop()
	c.Bookmark()
	if diff := cmp.Diff([]string{"ADDED b", "BOOKMARK 4"}, nextN(t, fc, w, 2)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

// A watch whose consumer calls ShareObjects receives the stored snapshot
// itself: two sharing watches get the same object; any other watch gets a
// private copy.
func TestWatchShareObjects(t *testing.T) {
	c, fc := newTestCluster(t)
	ctx := ctxT(t)
	open := func(share bool) watch.Interface {
		w := must(c.Pods("ns").Watch(ctx, metav1.ListOptions{}))(t)
		t.Cleanup(w.Stop)
		if share {
			w.(interface{ ShareObjects() }).ShareObjects()
		}
		return w
	}
	a, b, private := open(true), open(true), open(false)
	must(c.Pods("ns").Create(ctx, pod("p", "", ""), metav1.CreateOptions{}))(t)
	recv := func(w watch.Interface) *corev1.Pod {
		t.Helper()
		ev, ok := nextEvent(t, fc, w)
		if !ok {
			t.Fatal("watch closed; want an event")
		}
		return ev.Object.(*corev1.Pod)
	}
	pa, pb, pp := recv(a), recv(b), recv(private)
	if pa != pb {
		t.Error("two sharing watches got different objects; want the stored snapshot")
	}
	if pp == pa || pp.ResourceVersion != pa.ResourceVersion {
		t.Error("a watch that does not share got the shared snapshot, or another version; want a private copy")
	}
}
