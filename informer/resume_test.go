package informer_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/gate"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// closeSecond ends the first watch of pods that delivers anything instead
// of delivering its second event, once: the server closed the watch, and
// its client watches again from the last version it received.
type closeSecond struct {
	mu        sync.Mutex
	watch     uint64 // the first watch with a delivery
	delivered int
	closed    bool
}

func (g *closeSecond) Enter(_ context.Context, s gate.Step) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.Kind != gate.StepDelivery || s.Resource != "pods" || g.closed {
		return nil
	}
	if g.watch == 0 {
		g.watch = s.Watch
	}
	if s.Watch != g.watch {
		return nil
	}
	if g.delivered++; g.delivered == 2 {
		g.closed = true
		return errors.New("watch closed by the test")
	}
	return nil
}

// An informer that lists a fresh cluster watches from its version; the
// watch sends the objects created meanwhile, and ends (a dropped watch)
// after the first of them. The informer watches again from the last
// version it received, and misses none of them. When memcluster started
// at resourceVersion 0, the informer watched from "0", memcluster sent the
// objects in name order, the first was the newest (pod "a", created after
// "z"), the resumed watch started after it, and pod "z" never reached the
// cache: the controllers reading it would wait for it forever. memcluster
// now starts at 1, as etcd, and sends a watch from "0" in resourceVersion
// order (memcluster's TestWatchFromZeroInVersionOrder).
func TestInformerResumesAWatchFromZero(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clock.NewDeterministic(start)
	g := &closeSecond{}
	c := memcluster.New(memcluster.Config{Clock: fc, Gate: g})
	if err := c.SetFaults(memcluster.Faults{Rules: []memcluster.FaultRule{{Verb: "watch", Latency: time.Second}}}); err != nil {
		t.Fatal(err)
	}
	inf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = inf.Run(ctx) })
	// The informer lists the empty cluster and waits a second to watch.
	if err := fc.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if !inf.HasSynced() {
		t.Fatal("the informer has not listed the cluster")
	}
	for _, name := range []string{"z", "a"} {
		if _, err := c.Pods("ns").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Until both pods are cached, or nothing is left to do; the informer
	// watches again after a backoff of its own.
	cached := func() bool {
		pods, err := inf.Cache().List("", nil)
		return err == nil && len(pods) == 2
	}
	if err := fc.RunUntil(ctx, cached, time.Hour); err != nil && !errors.Is(err, clock.ErrStalled) && !errors.Is(err, clock.ErrTimeLimit) {
		t.Fatal(err)
	}
	t.Logf("at +%v", fc.Now().Sub(start))
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if !closed {
		t.Fatal("the watch was never closed: the test shows nothing")
	}
	pods, err := inf.Cache().List("", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{"a", "z"}; !slices.Equal(names, want) {
		t.Errorf("the informer's cache holds %v; want %v", names, want)
	}
}
