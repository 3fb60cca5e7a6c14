package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/memcluster"
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

// scaleRun rolls out the Deployments in a cluster of their own, wired the
// way a user would wire it (informers, both controllers, a kubelet), and
// returns the virtual time it took. Unlike the other tests of this package
// it keeps no recorder and no unbounded watch history: the benchmark
// measures the library, not the test harness. CTRLKIT_SCALE_MODE=
// deterministic runs it on a deterministic clock.
func scaleRun(b *testing.B, deployments int, replicas int32) time.Duration {
	res := simulate(b, simConfig{Deployments: deployments, Replicas: replicas,
		Deterministic: os.Getenv("CTRLKIT_SCALE_MODE") == "deterministic"})
	return res.Phases[0]
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

func scaleDiag(ctx context.Context, c *memcluster.Cluster) string {
	ds, _, _ := c.Deployments(ns).List(ctx, metav1.ListOptions{})
	rss, _, _ := c.ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	pods, _, _ := c.Pods(ns).List(ctx, metav1.ListOptions{})
	ready := 0
	for _, p := range pods {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	rsShort, rsStatus := 0, 0
	var ex string
	for _, rs := range rss {
		if rs.Status.Replicas != *rs.Spec.Replicas {
			rsShort++
		}
		if rs.Status.ObservedGeneration != rs.Generation || rs.Status.ReadyReplicas != rs.Status.Replicas {
			rsStatus++
			if ex == "" {
				ex = fmt.Sprintf("%s spec=%d status=%+v gen=%d", rs.Name, *rs.Spec.Replicas, rs.Status, rs.Generation)
			}
		}
	}
	dNot := 0
	var dex string
	for _, d := range ds {
		if d.Status.AvailableReplicas != *d.Spec.Replicas {
			dNot++
			if dex == "" {
				dex = fmt.Sprintf("%s status=%+v", d.Name, d.Status)
			}
		}
	}
	return fmt.Sprintf("deployments %d (not available %d, e.g. %s), replicasets %d (short %d, status behind %d, e.g. %s), pods %d (ready %d)",
		len(ds), dNot, dex, len(rss), rsShort, rsStatus, ex, len(pods), ready)
}
