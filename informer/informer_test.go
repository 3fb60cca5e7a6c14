package informer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newInformer returns an informer over a new script with a fake clock (the
// one in cfg, which must be a *clock.Fake, or a new one), a recorder
// registered before Run, and OnError collected.
func newInformer(t *testing.T, cfg informer.Config[*corev1.Pod]) (*informer.Informer[*corev1.Pod], *script, *recorder, errorLog) {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = clock.NewFake(t0)
	}
	fc := cfg.Clock.(*clock.Fake)
	src, rec, errs := newScript(fc), newRecorder(fc), newErrorLog(fc)
	cfg.OnError = errs.record
	inf := informer.New[*corev1.Pod](src, cfg)
	if _, err := inf.AddHandler(rec.handler()); err != nil {
		t.Fatalf("AddHandler() = %v", err)
	}
	return inf, src, rec, errs
}

func TestInformerListThenWatch(t *testing.T) {
	inf, src, rec, errs := newInformer(t, informer.Config[*corev1.Pod]{})
	second := newRecorder(rec.fc)
	reg, err := inf.AddHandler(second.handler())
	if err != nil {
		t.Fatalf("AddHandler() = %v", err)
	}
	start(t, inf)
	if inf.HasSynced() || reg.HasSynced() {
		t.Fatal("HasSynced() = true before the first list")
	}

	src.answerList(t, listReply{items: []*corev1.Pod{pod("ns", "a", version("1")), pod("ns", "b", version("2"))}, rv: "10"})
	fw := src.acceptWatch(t, "10")
	if !inf.HasSynced() {
		t.Error("informer HasSynced() = false once watching; want true")
	}
	waitClosed(t, rec.fc, "informer sync", inf.Synced())
	rec.expect(t, "add ns/a@1", "add ns/b@2")
	waitClosed(t, rec.fc, "registration sync", reg.Synced())

	fw.Add(pod("ns", "c", version("11")))
	fw.Modify(pod("ns", "a", version("12")))
	fw.Delete(pod("ns", "b", version("13")))
	fw.Add(pod("ns", "c", version("14"))) // Added for a known key is an update
	fw.Modify(pod("ns", "d", version("15")))
	want := []string{"add ns/a@1", "add ns/b@2", "add ns/c@11", "update ns/a@1->12", "delete ns/b@13", "update ns/c@11->14", "add ns/d@15"}
	rec.expect(t, want[2:]...)
	second.expect(t, want...)

	got := mustList(t, inf)
	slices.SortFunc(got, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if diff := cmp.Diff([]*corev1.Pod{pod("ns", "a", version("12")), pod("ns", "c", version("14")), pod("ns", "d", version("15"))}, got); diff != "" {
		t.Errorf("cache content mismatch (-want +got):\n%s", diff)
	}
	errs.expectNone(t)
}

func TestInformerHandlerSeesItsChangeInCache(t *testing.T) {
	fc := clock.NewFake(t0)
	src := newScript(fc)
	inf := informer.New[*corev1.Pod](src, informer.Config[*corev1.Pod]{Clock: fc})
	seen := make(chan string, 10)
	_, err := inf.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd: func(p *corev1.Pod) {
			got, err := inf.Cache().Get(nn(p.Namespace, p.Name))
			if err != nil {
				seen <- err.Error()
				return
			}
			seen <- got.ResourceVersion
		},
		OnDelete: func(d informer.Deleted[*corev1.Pod]) {
			_, err := inf.Cache().Get(d.Key)
			seen <- "deleted, NotFound=" + map[bool]string{true: "yes", false: "no"}[apierrors.IsNotFound(err)]
		},
	})
	if err != nil {
		t.Fatalf("AddHandler() = %v", err)
	}
	start(t, inf)
	src.answerList(t, listReply{rv: "1"})
	fw := src.acceptWatch(t, "1")
	for _, step := range []struct {
		typ  watch.EventType
		rv   string
		want string
	}{
		{watch.Added, "2", "2"},
		{watch.Deleted, "3", "deleted, NotFound=yes"},
	} {
		// One event at a time: a handler may see a later state than the one
		// it is told about, and this test wants to see exactly that one.
		fw.Action(step.typ, pod("ns", "a", version(step.rv)))
		if got := recv(t, fc, seen, "handler not called"); got != step.want {
			t.Errorf("handler read %q from the cache; want %q", got, step.want)
		}
	}
}

func expiredStatus(reason metav1.StatusReason) *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: reason, Message: "too old resource version"}
}

func TestInformerRelistsAfterExpiry(t *testing.T) {
	for _, tc := range []struct {
		name    string
		expire  func(t *testing.T, src *script, fw *fakewatch.Watch)
		wantErr string // reported through OnError; "" for none
	}{
		{"Error event, reason Expired", func(t *testing.T, _ *script, fw *fakewatch.Watch) {
			fw.Error(expiredStatus(metav1.StatusReasonExpired))
		}, ""},
		{"Error event, reason Gone", func(t *testing.T, _ *script, fw *fakewatch.Watch) {
			fw.Error(expiredStatus(metav1.StatusReasonGone))
		}, ""},
		{"Error event, bare 410", func(t *testing.T, _ *script, fw *fakewatch.Watch) {
			fw.Error(expiredStatus(""))
		}, ""},
		{"Watch returns Expired", func(t *testing.T, src *script, fw *fakewatch.Watch) {
			fw.Close()
			src.answerWatch(t, "11", watchReply{err: apierrors.NewResourceExpired("too old")})
		}, ""},
		{"other Error event", func(t *testing.T, _ *script, fw *fakewatch.Watch) {
			fw.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 500, Message: "etcd is sad"})
		}, "etcd is sad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inf, src, rec, errs := newInformer(t, informer.Config[*corev1.Pod]{})
			start(t, inf)
			src.answerList(t, listReply{rv: "10", items: []*corev1.Pod{
				pod("ns", "changed", version("1")), pod("ns", "gone", version("2")), pod("ns", "same", version("3")),
			}})
			fw := src.acceptWatch(t, "10")
			fw.Add(pod("ns", "watched", version("11")))
			rec.expect(t, "add ns/changed@1", "add ns/gone@2", "add ns/same@3", "add ns/watched@11")

			tc.expire(t, src, fw)
			src.answerList(t, listReply{rv: "20", items: []*corev1.Pod{
				pod("ns", "changed", version("15")), pod("ns", "new", version("16")), pod("ns", "same", version("3")), pod("ns", "watched", version("11")),
			}})
			fw2 := src.acceptWatch(t, "20")
			fw2.Add(pod("ns", "after", version("21")))
			// No calls for the unchanged objects: the add of "after" comes
			// right after the differences.
			rec.expect(t, "update ns/changed@1->15", "add ns/new@16", "tombstone ns/gone@2", "add ns/after@21")
			if tc.wantErr != "" {
				errs.expect(t, tc.wantErr)
			}
			errs.expectNone(t)
			if diff := cmp.Diff([]string{"ns/after", "ns/changed", "ns/new", "ns/same", "ns/watched"}, keys(mustList(t, inf))); diff != "" {
				t.Errorf("cache keys mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func mustList(t *testing.T, inf *informer.Informer[*corev1.Pod]) []*corev1.Pod {
	t.Helper()
	got, err := inf.Cache().List("", nil)
	if err != nil {
		t.Fatalf("List() error = %v", err)
	}
	return got
}

func TestInformerRewatchesFromLastResourceVersion(t *testing.T) {
	fc := clock.NewFake(t0)
	inf, src, rec, errs := newInformer(t, informer.Config[*corev1.Pod]{Clock: fc})
	start(t, inf)
	src.answerList(t, listReply{rv: "10"})
	fw := src.acceptWatch(t, "10")
	fw.Add(pod("ns", "a", version("11")))
	fw.Modify(pod("ns", "a", version("12")))
	fw.Close()
	// Resumed from the last event without a list (acceptWatch fails the
	// test on a List call).
	fw = src.acceptWatch(t, "12")
	fw.Bookmark(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "30"}})
	fw.Close()
	fw = src.acceptWatch(t, "30")
	// An empty watch that ends, then a failed Watch call: retried from the
	// same version, once at once and then after a backoff.
	fw.Close()
	src.answerWatch(t, "30", watchReply{err: errors.New("connection refused")})
	errs.expect(t, "connection refused")
	waitForTimers(t, fc, 1)
	fc.Step(time.Minute)
	fw = src.acceptWatch(t, "30")
	fw.Delete(pod("ns", "a", version("31")))
	// The bookmark was not a handler call.
	rec.expect(t, "add ns/a@11", "update ns/a@11->12", "delete ns/a@31")
}

func TestInformerRetriesWithBackoff(t *testing.T) {
	fc := clock.NewFake(t0)
	inf, src, rec, errs := newInformer(t, informer.Config[*corev1.Pod]{Clock: fc})
	start(t, inf)
	src.answerList(t, listReply{err: errors.New("apiserver down")})
	errs.expect(t, "apiserver down")
	src.answerList(t, listReply{err: errors.New("still down")}) // the first retry is immediate
	errs.expect(t, "still down")

	waitForTimers(t, fc, 1) // now it backs off on the clock
	select {
	case src.lists <- listReply{rv: "1"}:
		t.Fatal("List was called again without waiting")
	default:
	}
	fc.Step(time.Minute)
	src.answerList(t, listReply{rv: "1", items: []*corev1.Pod{pod("ns", "a", version("1"))}})
	src.acceptWatch(t, "1")
	rec.expect(t, "add ns/a@1")
	if !inf.HasSynced() {
		t.Error("HasSynced() = false after a successful list")
	}
}

func TestInformerResync(t *testing.T) {
	fc := clock.NewFake(t0)
	inf, src, rec, _ := newInformer(t, informer.Config[*corev1.Pod]{Clock: fc, ResyncPeriod: time.Minute})
	start(t, inf)
	src.answerList(t, listReply{rv: "5", items: []*corev1.Pod{pod("ns", "a", version("1")), pod("ns", "b", version("2"))}})
	fw := src.acceptWatch(t, "5")
	rec.expect(t, "add ns/a@1", "add ns/b@2")

	for range 2 {
		waitForTimers(t, fc, 1)
		fc.Step(time.Minute)
		rec.expect(t, "update ns/a@1->1 (same object)", "update ns/b@2->2 (same object)")
	}
	fw.Add(pod("ns", "c", version("6")))
	rec.expect(t, "add ns/c@6")
}

func TestInformerTransform(t *testing.T) {
	inf, src, rec, errs := newInformer(t, informer.Config[*corev1.Pod]{
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Labels["reject"] != "" {
				return nil, errors.New("rejected by transform")
			}
			p.ManagedFields = nil
			return p, nil
		},
	})
	start(t, inf)
	managed := func(p *corev1.Pod) { p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}} }
	src.answerList(t, listReply{rv: "1", items: []*corev1.Pod{
		pod("ns", "a", version("1"), managed), pod("ns", "bad", version("1"), labeled("reject", "y")),
	}})
	fw := src.acceptWatch(t, "1")
	errs.expect(t, "rejected by transform")
	fw.Add(pod("ns", "b", version("2"), managed))
	// A rejected update removes the stale version, with a tombstone.
	fw.Modify(pod("ns", "a", version("3"), labeled("reject", "y")))
	errs.expect(t, "rejected by transform")
	rec.expect(t, "add ns/a@1", "add ns/b@2", "tombstone ns/a@1")

	want := []*corev1.Pod{pod("ns", "b", version("2"))}
	if diff := cmp.Diff(want, mustList(t, inf)); diff != "" {
		t.Errorf("cache content mismatch (-want +got):\n%s", diff)
	}
}

func TestInformerRejectedObjects(t *testing.T) {
	inf, src, rec, errs := newInformer(t, informer.Config[*corev1.Pod]{
		Cache: informer.CacheConfig[*corev1.Pod]{Indexers: map[string]informer.IndexFunc[*corev1.Pod]{
			"app": func(p *corev1.Pod) ([]string, error) {
				if p.Labels["app"] == "" {
					return nil, errors.New("missing app label")
				}
				return []string{p.Labels["app"]}, nil
			},
		}},
	})
	start(t, inf)
	src.answerList(t, listReply{rv: "1", items: []*corev1.Pod{
		pod("ns", "a", version("1"), labeled("app", "web")), nil, pod("ns", "", version("1"), labeled("app", "web")),
	}})
	fw := src.acceptWatch(t, "1")
	errs.expect(t, "nil object")
	errs.expect(t, "has no name")

	var nilPod *corev1.Pod
	fw.Add(nilPod)
	errs.expect(t, "want a non-nil")
	fw.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}})
	errs.expect(t, "*v1.Service")
	fw.Action(watch.EventType("WEIRD"), pod("ns", "x"))
	errs.expect(t, "unknown watch event type")
	fw.Delete(pod("ns", "never-seen", version("2"))) // nothing to delete: no call
	fw.Modify(pod("ns", "a", version("3")))          // index error: dropped
	errs.expect(t, "missing app label")
	fw.Add(pod("ns", "b", version("4"), labeled("app", "db")))
	rec.expect(t, "add ns/a@1", "tombstone ns/a@1", "add ns/b@4")
	errs.expectNone(t)
}

func TestInformerRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		inf  *informer.Informer[*corev1.Pod]
	}{
		{"nil ListWatcher", informer.New[*corev1.Pod](nil, informer.Config[*corev1.Pod]{})},
		{"negative resync", informer.New[*corev1.Pod](newScript(nil), informer.Config[*corev1.Pod]{ResyncPeriod: -time.Second})},
		{"invalid indexer", informer.New[*corev1.Pod](newScript(nil), informer.Config[*corev1.Pod]{
			Cache: informer.CacheConfig[*corev1.Pod]{Indexers: map[string]informer.IndexFunc[*corev1.Pod]{"bad": nil}},
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.inf.Run(t.Context()); err == nil {
				t.Error("Run() = nil; want a configuration error")
			}
		})
	}

	t.Run("twice, then stopped", func(t *testing.T) {
		fc := clock.NewFake(t0)
		src := newScript(fc)
		inf := informer.New[*corev1.Pod](src, informer.Config[*corev1.Pod]{Clock: fc})
		start(t, inf)
		src.answerList(t, listReply{rv: "1"})
		src.acceptWatch(t, "1")
		if err := inf.Run(t.Context()); err == nil {
			t.Error("second Run() = nil; want an error")
		}
	})

	t.Run("AddHandler after Run returned", func(t *testing.T) {
		inf := informer.New[*corev1.Pod](newScript(nil), informer.Config[*corev1.Pod]{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := inf.Run(ctx); err != nil {
			t.Fatalf("Run(cancelled ctx) = %v; want nil", err)
		}
		if _, err := inf.AddHandler(informer.Handler[*corev1.Pod]{}); err == nil {
			t.Error("AddHandler after Run returned = nil; want an error")
		}
	})
}

func TestInformerNilWatch(t *testing.T) {
	inf, src, rec, errs := newInformer(t, informer.Config[*corev1.Pod]{})
	start(t, inf)
	src.answerList(t, listReply{rv: "1"})
	src.answerWatch(t, "1", watchReply{}) // no watch and no error
	errs.expect(t, "neither a watch nor an error")
	fw := src.acceptWatch(t, "1")
	fw.Add(pod("ns", "a", version("2")))
	rec.expect(t, "add ns/a@2")
}

func TestListWatchFuncsNil(t *testing.T) {
	var lw informer.ListWatchFuncs[*corev1.Pod]
	if _, _, err := lw.List(t.Context()); err == nil {
		t.Error("List with nil ListFunc = nil error")
	}
	if _, err := lw.Watch(t.Context(), ""); err == nil {
		t.Error("Watch with nil WatchFunc = nil error")
	}
}
