package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
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

// scaleRun rolls out the Deployments in a cluster of their own, wired the
// way a user would wire it (informers, both controllers, a kubelet), and
// returns the virtual time it took. Unlike the other tests of this package
// it keeps no recorder and no unbounded watch history: the benchmark
// measures the library, not the test harness.
func scaleRun(b *testing.B, deployments int, replicas int32) time.Duration {
	fc := clock.NewFake(epoch)
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1,
		WatchBuffer: 1 << 30}) // every watcher here keeps up; none may be cut off
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	client := memcluster.ControllerClient{Cluster: c}
	dInf := informer.New(c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: fc})
	rsInf := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	podInf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	dc, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Client: client, Clock: fc, Workers: 5,
	})
	if err != nil {
		b.Fatal(err)
	}
	rc, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: rsInf, Pods: podInf, Client: client, Clock: fc, Workers: 5,
	})
	if err != nil {
		b.Fatal(err)
	}
	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{Model: memcluster.FixedModel(
		memcluster.PodBehavior{StartDelay: time.Second, ReadyDelay: 2 * time.Second, ShutdownDelay: time.Second})})

	// Count rolled-out Deployments with the Deployment informer, rather
	// than listing 10,000 of them after every step.
	var done atomic.Int64
	var counted sync.Map
	count := func(d *appsv1.Deployment) {
		if st, err := rollout.Status(d, 0); err == nil && st.Done {
			if _, dup := counted.LoadOrStore(d.UID, true); !dup {
				done.Add(1)
			}
		}
	}
	if _, err := dInf.AddHandler(informer.Handler[*appsv1.Deployment]{
		OnAdd: count, OnUpdate: func(_, d *appsv1.Deployment) { count(d) },
	}); err != nil {
		b.Fatal(err)
	}
	errc := make(chan error, 8)
	for _, run := range []func(context.Context) error{dInf.Run, rsInf.Run, podInf.Run, dc.Run, rc.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- err
			}
		})
	}
	wg.Go(func() { kubelet.Run(ctx) })

	start := fc.Now()
	deploys := c.Deployments(ns)
	for i := range deployments {
		if _, err := deploys.Create(ctx, newDeployment(fmt.Sprintf("d%05d", i), replicas, "app:1"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.RunUntil(ctx, func() bool { return done.Load() == int64(deployments) }, 24*time.Hour); err != nil {
		select {
		case err := <-errc:
			b.Error(err)
		default:
		}
		if f, err := os.Create("/tmp/goroutines.txt"); err == nil {
			pprof.Lookup("goroutine").WriteTo(f, 1)
			f.Close()
		}
		b.Fatalf("%d of %d Deployments rolled out at +%v: %v\n%s", done.Load(), deployments, fc.Now().Sub(start), err, scaleDiag(ctx, c)+fmt.Sprintf("\ninformer: pods %d rs %d", podInf.Cache().Len(), rsInf.Cache().Len()))
	}
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	return fc.Now().Sub(start)
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
