package informer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// On a fake clock an informer's work is tracked from New to the handlers'
// calls: once the clock has settled, every handler has seen every change,
// with no polling.
func TestInformerWorkIsTracked(t *testing.T) {
	for _, deterministic := range []bool{false, true} {
		t.Run(fmt.Sprint("deterministic=", deterministic), func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			fc := clock.NewFake(start)
			if deterministic {
				fc = clock.NewDeterministic(start)
			}
			c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pod := func(name string) *corev1.Pod {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
			}
			if _, err := c.Pods("ns").Create(ctx, pod("a"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			inf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
			var mu sync.Mutex
			var seen []string
			synced := false
			if _, err := inf.AddHandler(informer.Handler[*corev1.Pod]{
				OnAdd: func(p *corev1.Pod) { mu.Lock(); seen = append(seen, "add "+p.Name); mu.Unlock() },
				OnDelete: func(d informer.Deleted[*corev1.Pod]) {
					mu.Lock()
					seen = append(seen, "delete "+d.Key.Name)
					mu.Unlock()
				},
				OnSynced: func() { mu.Lock(); synced = true; mu.Unlock() },
			}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			wg.Go(func() { _ = inf.Run(ctx) })
			check := func(step string, want ...string) {
				t.Helper()
				if err := fc.Settle(ctx); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if !synced || !slices.Equal(seen, want) {
					t.Errorf("%s: synced=%v, handler saw %q; want synced and %q", step, synced, seen, want)
				}
			}
			check("first list", "add a")
			if _, err := c.Pods("ns").Create(ctx, pod("b"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			check("create", "add a", "add b")
			if err := c.Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				t.Fatal(err)
			}
			check("delete", "add a", "add b", "delete a")
		})
	}
}

// On a deterministic clock a listener's pushes are released one at a time
// while later ones wait in its buffer; the notes still come out in order,
// each once, however the buffer is consumed and compacted.
func TestListenerOrderOnDeterministicClock(t *testing.T) {
	fc := clock.NewDeterministic(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1, WatchBuffer: 1 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	var mu sync.Mutex
	var seen []string
	if _, err := inf.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod) { mu.Lock(); seen = append(seen, "add "+p.Name); mu.Unlock() },
		OnUpdate: func(_, p *corev1.Pod) { mu.Lock(); seen = append(seen, "update "+p.Name); mu.Unlock() },
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = inf.Run(ctx) })
	if err := fc.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 300 {
		name := fmt.Sprintf("p%03d", i)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if _, err := c.Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "add "+name)
		if i%3 == 0 { // some pods change too, later in the same instant
			p.Labels = map[string]string{"n": fmt.Sprint(i)}
			if _, err := c.Pods("ns").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			want = append(want, "update "+name)
		}
	}
	if err := fc.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Errorf("handler saw %d notes, want %d in creation order; first difference at %d", len(seen), len(want), firstDiff(seen, want))
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
