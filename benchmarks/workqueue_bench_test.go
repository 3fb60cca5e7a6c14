package benchmarks

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/workqueue"
	"k8s.io/apimachinery/pkg/types"
	cgworkqueue "k8s.io/client-go/util/workqueue"
)

// queueUnderTest is the part of a work queue the benchmarks drive, so that
// each benchmark body runs unchanged against both implementations.
type queueUnderTest[T comparable] interface {
	Add(item T)
	AddAfter(item T, d time.Duration)
	Get() (item T, shutdown bool)
	Done(item T)
	ShutDown()
}

// impls are the implementations compared, under their names in the
// benchmark names.
var impls = []string{"ctrlkit", "clientgo"}

// newQueue returns an empty queue of the named implementation, configured
// as controllers use it: the default controller rate limiter, no metrics.
// For client-go that is the rate-limiting queue, the only one of its
// queues with the methods ctrlkit's Queue has.
func newQueue[T comparable](impl string) queueUnderTest[T] {
	if impl == "ctrlkit" {
		return workqueue.New(workqueue.Config[T]{Name: "bench"})
	}
	return cgworkqueue.NewTypedRateLimitingQueueWithConfig(
		cgworkqueue.DefaultTypedControllerRateLimiter[T](),
		cgworkqueue.TypedRateLimitingQueueConfig[T]{Name: "bench"})
}

// keys returns n keys shaped like those of a controller.
func keys(n int) []types.NamespacedName {
	ks := make([]types.NamespacedName, n)
	for i := range ks {
		ks[i] = types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("replicaset-%d", i)}
	}
	return ks
}

// BenchmarkQueueSerial measures one Add, Get and Done of a key on one
// goroutine: the cost of the queue itself, without hand-offs. The keys
// cycle through 1000 names. key=nsname uses types.NamespacedName, the key
// of ctrlkit's controllers; key=string uses "namespace/name" strings, the
// keys of older client-go controllers, which hash faster.
func BenchmarkQueueSerial(b *testing.B) {
	nn := keys(1000)
	strs := make([]string, len(nn))
	for i, k := range nn {
		strs[i] = k.String()
	}
	for _, impl := range impls {
		b.Run("key=nsname/impl="+impl, func(b *testing.B) { serial(b, newQueue[types.NamespacedName](impl), nn) })
	}
	for _, impl := range impls {
		b.Run("key=string/impl="+impl, func(b *testing.B) { serial(b, newQueue[string](impl), strs) })
	}
}

func serial[T comparable](b *testing.B, q queueUnderTest[T], ks []T) {
	defer q.ShutDown()
	// Warm up, so that steady state is measured.
	for _, k := range ks {
		q.Add(k)
		k, _ := q.Get()
		q.Done(k)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		q.Add(ks[i%len(ks)])
		k, _ := q.Get()
		q.Done(k)
	}
}

// BenchmarkQueueContention runs 8 producers adding 1000 keys round-robin
// and 8 workers getting them, until every Add has been made and the queue
// has drained. One op is one Add; gets/add reports the fraction of adds
// that led to a Get (the rest coalesced).
func BenchmarkQueueContention(b *testing.B) {
	ks := keys(1000)
	for _, impl := range impls {
		b.Run("impl="+impl, func(b *testing.B) {
			q := newQueue[types.NamespacedName](impl)
			b.ReportAllocs()
			b.ResetTimer()
			gets := contend(q, ks, b.N)
			b.StopTimer()
			b.ReportMetric(float64(gets)/float64(b.N), "gets/add")
		})
	}
}

// contend runs 8 producers making n Adds of ks round-robin and 8 workers
// getting them, until every Add has been made and the queue has drained
// and shut down. It returns the number of Gets.
func contend(q queueUnderTest[types.NamespacedName], ks []types.NamespacedName, n int) int64 {
	const producers, consumers = 8, 8
	var gets atomic.Int64
	var workers sync.WaitGroup
	for range consumers {
		workers.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				gets.Add(1)
				q.Done(k)
			}
		})
	}
	var adders sync.WaitGroup
	for p := range producers {
		adders.Go(func() {
			for i := p; i < n; i += producers {
				q.Add(ks[i%len(ks)])
			}
		})
	}
	adders.Wait()
	q.ShutDown() // workers drain what is queued, then stop
	workers.Wait()
	return gets.Load()
}

// delayFor spreads delays over [min, min+span) in a fixed pseudo-random
// order, so that the delay heap sees unordered due times.
func delayFor(i int, min, span time.Duration) time.Duration {
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	x ^= x >> 31
	return min + time.Duration(x%uint64(span))
}

// BenchmarkQueueAddAfter measures what AddAfter costs its caller, filling
// a queue with 100k waiting items (delays of 1–2 hours, so none becomes
// due). One op is one AddAfter of an item not yet in the queue; a fresh
// queue is used for every 100k.
func BenchmarkQueueAddAfter(b *testing.B) {
	const batch = 100_000
	ks := keys(batch)
	for _, impl := range impls {
		b.Run("impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			var q queueUnderTest[types.NamespacedName]
			for i := range b.N {
				if i%batch == 0 {
					b.StopTimer()
					if q != nil {
						q.ShutDown()
					}
					q = newQueue[types.NamespacedName](impl)
					b.StartTimer()
				}
				q.AddAfter(ks[i%batch], delayFor(i, time.Hour, time.Hour))
			}
			b.StopTimer()
			q.ShutDown()
		})
	}
}

// BenchmarkQueueAddAfterLateness adds 100k items with delays spread over
// 10ms–1s of the real clock and has 2 workers take them as they become
// due. It reports how late the workers got them, past their due time
// (p50, p99 and max, in ms). One op is one round of 100k items; skipped
// in -short mode.
func BenchmarkQueueAddAfterLateness(b *testing.B) {
	if testing.Short() {
		b.Skip("takes a second per op")
	}
	const n, workers = 100_000, 2
	for _, impl := range impls {
		b.Run("impl="+impl, func(b *testing.B) {
			var late []time.Duration
			for range b.N {
				late = append(late, latenessRound(newQueue[int](impl), n, workers)...)
			}
			slices.Sort(late)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(late[len(late)/2]), "p50-late-ms")
			b.ReportMetric(ms(late[len(late)*99/100]), "p99-late-ms")
			b.ReportMetric(ms(late[len(late)-1]), "max-late-ms")
		})
	}
}

func latenessRound(q queueUnderTest[int], n, workers int) []time.Duration {
	due := make([]time.Time, n)
	late := make([]time.Duration, n)
	var wg sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(n))
	for range workers {
		wg.Go(func() {
			for {
				i, shutdown := q.Get()
				if shutdown {
					return
				}
				late[i] = time.Since(due[i])
				q.Done(i)
				if left.Add(-1) == 0 {
					q.ShutDown()
				}
			}
		})
	}
	for i := range n {
		d := delayFor(i, 10*time.Millisecond, 990*time.Millisecond)
		// due is taken before the call, so it is no later than the due
		// time the queue computes: lateness is, if anything, overstated.
		due[i] = time.Now().Add(d)
		q.AddAfter(i, d)
	}
	wg.Wait()
	return late
}

// BenchmarkQueuePaired times blocks of work on ctrlkit and on client-go
// alternately, in the same goroutine, and reports the median and the 10th
// and 90th percentiles of the ctrlkit/clientgo time ratio over the pairs.
// Other work on the machine then slows both sides of a pair alike, which
// the separate benchmarks above cannot ensure. One op is one pair of
// blocks; which side goes first alternates.
func BenchmarkQueuePaired(b *testing.B) {
	nn := keys(100_000)
	strs := make([]string, 1000)
	for i := range strs {
		strs[i] = nn[i].String()
	}
	b.Run("op=serial/key=nsname", func(b *testing.B) { pairedSerial(b, nn[:1000]) })
	b.Run("op=serial/key=string", func(b *testing.B) { pairedSerial(b, strs) })
	b.Run("op=contention", func(b *testing.B) {
		paired(b, func(impl string) time.Duration {
			q := newQueue[types.NamespacedName](impl)
			start := time.Now()
			contend(q, nn[:1000], 200_000)
			return time.Since(start)
		})
	})
	b.Run("op=addafter-100k", func(b *testing.B) {
		paired(b, func(impl string) time.Duration {
			q := newQueue[types.NamespacedName](impl)
			defer q.ShutDown()
			start := time.Now()
			for i, k := range nn {
				q.AddAfter(k, delayFor(i, time.Hour, time.Hour))
			}
			return time.Since(start)
		})
	})
}

// pairedSerial pairs blocks of 20k serial Add, Get and Done.
func pairedSerial[T comparable](b *testing.B, ks []T) {
	qs := map[string]queueUnderTest[T]{}
	for _, impl := range impls {
		qs[impl] = newQueue[T](impl)
		defer qs[impl].ShutDown()
	}
	paired(b, func(impl string) time.Duration {
		q := qs[impl]
		start := time.Now()
		for i := range 20_000 {
			q.Add(ks[i%len(ks)])
			k, _ := q.Get()
			q.Done(k)
		}
		return time.Since(start)
	})
}

func paired(b *testing.B, block func(impl string) time.Duration) {
	block("ctrlkit") // warm up both
	block("clientgo")
	ratios := make([]float64, 0, b.N)
	for i := range b.N {
		var c, g time.Duration
		if i%2 == 0 {
			c, g = block("ctrlkit"), block("clientgo")
		} else {
			g, c = block("clientgo"), block("ctrlkit")
		}
		ratios = append(ratios, float64(c)/float64(g))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio-p50")
	b.ReportMetric(ratios[len(ratios)/10], "ratio-p10")
	b.ReportMetric(ratios[len(ratios)*9/10], "ratio-p90")
}

// TestQueueBenchmarksAgree checks, quickly, that both implementations
// behave alike on the pattern the benchmarks use, so that the benchmarks
// compare like with like.
func TestQueueBenchmarksAgree(t *testing.T) {
	for _, impl := range impls {
		t.Run("impl="+impl, func(t *testing.T) {
			q := newQueue[string](impl)
			for _, k := range []string{"a", "b", "a", "c", "b"} {
				q.Add(k)
			}
			var got []string
			for range 3 {
				k, shutdown := q.Get()
				if shutdown {
					t.Fatal("Get() reported shutdown before the queue was shut down")
				}
				got = append(got, k)
				q.Done(k)
			}
			if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
				t.Errorf("Get() order = %q; want %q", got, want)
			}
			q.ShutDown()
			if _, shutdown := q.Get(); !shutdown {
				t.Error("Get() after ShutDown of an empty queue did not report shutdown")
			}
		})
	}
}
