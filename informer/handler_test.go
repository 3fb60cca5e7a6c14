package informer_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/informer"
)

func TestInformerLateHandler(t *testing.T) {
	inf, src, rec, _ := newInformer(t, informer.Config[*corev1.Pod]{})
	start(t, inf)
	src.answerList(t, listReply{rv: "5", items: []*corev1.Pod{pod("ns", "a", version("1")), pod("ns", "b", version("2"))}})
	fw := src.acceptWatch(t, "5")
	fw.Delete(pod("ns", "a", version("6")))
	fw.Add(pod("ns", "c", version("7")))
	rec.expect(t, "add ns/a@1", "add ns/b@2", "delete ns/a@6", "add ns/c@7")

	late := newRecorder(rec.fc)
	reg, err := inf.AddHandler(late.handler())
	if err != nil {
		t.Fatalf("AddHandler() = %v", err)
	}
	// In listing order: c took the place a left.
	late.expect(t, "add ns/c@7", "add ns/b@2")
	waitClosed(t, rec.fc, "late registration sync", reg.Synced())
	fw.Modify(pod("ns", "b", version("8")))
	late.expect(t, "update ns/b@2->8")
	rec.expect(t, "update ns/b@2->8")
}

func TestInformerSlowHandlerDoesNotBlockOthers(t *testing.T) {
	inf, src, fast, _ := newInformer(t, informer.Config[*corev1.Pod]{})
	gate, slow := make(chan struct{}), newRecorder(fast.fc)
	h := slow.handler()
	onAdd := h.OnAdd
	h.OnAdd = func(p *corev1.Pod) {
		<-gate
		onAdd(p)
	}
	reg, err := inf.AddHandler(h)
	if err != nil {
		t.Fatalf("AddHandler() = %v", err)
	}
	start(t, inf)
	src.answerList(t, listReply{rv: "1", items: []*corev1.Pod{pod("ns", "a", version("1"))}})
	fw := src.acceptWatch(t, "1")
	for _, name := range []string{"b", "c", "d"} {
		fw.Add(pod("ns", name, version("2")))
	}
	fast.expect(t, "add ns/a@1", "add ns/b@2", "add ns/c@2", "add ns/d@2")
	if got := inf.Cache().Len(); got != 4 {
		t.Errorf("Cache().Len() = %d while a handler is stuck; want 4", got)
	}
	if got := reg.Pending(); got != 4 {
		t.Errorf("stuck handler's Pending() = %d; want 4", got)
	}
	close(gate)
	slow.expect(t, "add ns/a@1", "add ns/b@2", "add ns/c@2", "add ns/d@2")
}

func TestInformerRemoveHandler(t *testing.T) {
	inf, src, rec, _ := newInformer(t, informer.Config[*corev1.Pod]{})
	removed := newRecorder(rec.fc)
	reg, err := inf.AddHandler(removed.handler())
	if err != nil {
		t.Fatalf("AddHandler() = %v", err)
	}
	start(t, inf)
	src.answerList(t, listReply{rv: "1", items: []*corev1.Pod{pod("ns", "a", version("1"))}})
	fw := src.acceptWatch(t, "1")
	removed.expect(t, "add ns/a@1")
	if err := inf.RemoveHandler(reg); err != nil {
		t.Fatalf("RemoveHandler() = %v", err)
	}
	if err := inf.RemoveHandler(reg); err == nil {
		t.Error("second RemoveHandler() = nil; want an error")
	}
	fw.Add(pod("ns", "b", version("2")))
	rec.expect(t, "add ns/a@1", "add ns/b@2")
	// Once the clock has settled, every call that was to come has come.
	removed.expectNone(t)
}
