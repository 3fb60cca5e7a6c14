package e2e

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// BenchmarkScale creates 10,000 Deployments of 10 replicas at once
// (100,000 pods) and runs the virtual clock until every one is rolled out.
// It reports the wall time, the virtual time and the peak heap, sampled
// with runtime.ReadMemStats. CTRLKIT_SCALE_DEPLOYMENTS and
// CTRLKIT_SCALE_REPLICAS change the size. Run it once:
//
//	go test -run xxx -bench BenchmarkScale -benchtime 1x ./e2e
func BenchmarkScale(b *testing.B) {
	deployments, replicas := envInt(b, "CTRLKIT_SCALE_DEPLOYMENTS", 10000), envInt(b, "CTRLKIT_SCALE_REPLICAS", 10)
	for range b.N {
		b.StopTimer()
		runtime.GC()
		peak, stop := samplePeakHeap()
		b.StartTimer()
		wall := time.Now()
		virtual := scaleRun(b, deployments, int32(replicas))
		elapsed := time.Since(wall)
		b.StopTimer()
		heap := stop()
		b.ReportMetric(elapsed.Seconds(), "wall-s")
		b.ReportMetric(virtual.Seconds(), "virtual-s")
		b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
		b.Logf("%d deployments × %d replicas: rolled out in %v wall, %v virtual; peak heap %d MiB (sampled: %d)",
			deployments, replicas, elapsed.Round(time.Millisecond), virtual, heap>>20, peak.Load()>>20)
	}
}

// scaleRun rolls out the Deployments in a world of its own, and returns
// the virtual time it took.
func scaleRun(b *testing.B, deployments int, replicas int32) time.Duration {
	w := newWorld(b, worldConfig{Seed: 1, NoChecks: true})
	// Count rolled-out Deployments from an informer of our own, rather
	// than listing 10,000 of them after every step.
	var done atomic.Int64
	counted := sync.Map{}
	inf := informer.New(w.c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: w.fc})
	count := func(d *appsv1.Deployment) {
		if st, err := rollout.Status(d, 0); err == nil && st.Done {
			if _, dup := counted.LoadOrStore(d.UID, true); !dup {
				done.Add(1)
			}
		}
	}
	if _, err := inf.AddHandler(informer.Handler[*appsv1.Deployment]{
		OnAdd: count, OnUpdate: func(_, d *appsv1.Deployment) { count(d) },
	}); err != nil {
		b.Fatal(err)
	}
	go func() {
		if err := inf.Run(w.ctx); err != nil {
			b.Error(err)
		}
	}()
	start := w.fc.Now()
	for i := range deployments {
		w.create(newDeployment(fmt.Sprintf("d%05d", i), replicas, "app:1"))
	}
	w.runUntil("every Deployment is rolled out", 24*time.Hour, func() bool { return done.Load() == int64(deployments) })
	return w.fc.Now().Sub(start)
}

// samplePeakHeap samples the heap in use until stop is called, and stop
// returns the peak.
func samplePeakHeap() (peak *atomic.Uint64, stop func() uint64) {
	peak = new(atomic.Uint64)
	quit, finished := make(chan struct{}), make(chan struct{})
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if m.HeapAlloc > peak.Load() {
			peak.Store(m.HeapAlloc)
		}
	}
	go func() {
		defer close(finished)
		tick := time.NewTicker(250 * time.Millisecond) // measurement, not synchronisation
		defer tick.Stop()
		for {
			sample()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return peak, func() uint64 {
		close(quit)
		<-finished
		sample()
		return peak.Load()
	}
}

func envInt(tb testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		tb.Fatalf("%s=%q: want a number", name, s)
	}
	return n
}
