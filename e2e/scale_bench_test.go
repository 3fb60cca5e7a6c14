package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// BenchmarkScale creates 10,000 Deployments of 10 replicas at once
// (100,000 pods) and runs the virtual clock until every one is rolled out.
// It reports the wall time, the virtual time, the peak heap (sampled
// with runtime.ReadMemStats) and the peak live heap (what the last
// garbage collection found reachable). CTRLKIT_SCALE_DEPLOYMENTS and
// CTRLKIT_SCALE_REPLICAS change the size; CTRLKIT_SCALE_HEAPPROFILE=file
// writes a heap profile whenever the live heap has grown by a tenth, so
// that file ends with the profile of the largest one. Run it once, and
// measure CPU time and peak RSS from outside:
//
//	go test -c -o scale.test ./e2e
//	CTRLKIT_SCALE_DEPLOYMENTS=10000 /usr/bin/time -f "cpu %U+%S s, maxrss %M KB" \
//		./scale.test -test.run xxx -test.bench BenchmarkScale -test.benchtime 1x
func BenchmarkScale(b *testing.B) {
	deployments, replicas := envInt(b, "CTRLKIT_SCALE_DEPLOYMENTS", 10000), envInt(b, "CTRLKIT_SCALE_REPLICAS", 10)
	for range b.N {
		b.StopTimer()
		runtime.GC()
		stop := sampleHeap(os.Getenv("CTRLKIT_SCALE_HEAPPROFILE"))
		b.StartTimer()
		wall := time.Now()
		virtual := scaleRun(b, deployments, int32(replicas))
		elapsed := time.Since(wall)
		b.StopTimer()
		heap, live := stop()
		b.ReportMetric(elapsed.Seconds(), "wall-s")
		b.ReportMetric(virtual.Seconds(), "virtual-s")
		b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(live)/(1<<20), "peak-live-MiB")
		b.Logf("%d deployments × %d replicas: rolled out in %v wall, %v virtual; peak heap %d MiB, peak live heap %d MiB",
			deployments, replicas, elapsed.Round(time.Millisecond), virtual, heap>>20, live>>20)
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

// sampleHeap samples the heap in use and the live heap until stop is
// called, and stop returns their peaks. With profile set, it writes a heap
// profile there whenever the live heap has grown by a tenth.
func sampleHeap(profile string) (stop func() (heap, live uint64)) {
	quit, finished := make(chan struct{}), make(chan struct{})
	var peakHeap, peakLive, profiled uint64
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peakHeap = max(peakHeap, m.HeapAlloc)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		live := s[0].Value.Uint64()
		peakLive = max(peakLive, live)
		if profile != "" && live > profiled*11/10 {
			profiled = live
			if f, err := os.Create(profile); err == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				_ = f.Close()
			}
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
	return func() (uint64, uint64) {
		close(quit)
		<-finished
		sample()
		return peakHeap, peakLive
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
