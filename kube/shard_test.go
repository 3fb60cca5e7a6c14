package kube_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report logs a line of the measurements and appends it to
// $CTRLKIT_SHARD_REPORT, if set.
func report(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	if p := os.Getenv("CTRLKIT_SHARD_REPORT"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

func startKubelet(w *shardWorld, t *testing.T) {
	k := memcluster.NewKubelet(w.c, memcluster.KubeletConfig{Model: memcluster.FixedModel(memcluster.PodBehavior{StartDelay: time.Second, ReadyDelay: time.Second, ShutdownDelay: time.Second})})
	go k.Run(t.Context())
}

// TestShardedOperators runs N sharded replicas of the Operator on the
// in-memory cluster and measures them side by side (informer memory per
// replica, syncs, convergence in virtual time, watch events received).
// By default it is small; CTRLKIT_SHARD_BENCH=full is the scale
// (2,000 Deployments × 10 replicas in 200 namespaces, 1, 2 and 4 shards).
func TestShardedOperators(t *testing.T) {
	scale, full := benchScale()
	type config struct {
		n    int
		mode kube.SelectorMode
	}
	configs := []config{{1, kube.SelectorAuto}, {3, kube.SelectorAuto}, {3, kube.SelectorClient}}
	if full {
		configs = []config{{1, kube.SelectorAuto}, {2, kube.SelectorAuto}, {4, kube.SelectorAuto}, {4, kube.SelectorClient}}
	}
	if testing.Short() && !full {
		configs = []config{{3, kube.SelectorAuto}}
	}
	for _, cf := range configs {
		n := cf.n
		t.Run(fmt.Sprintf("%d shards %s", n, cf.mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newShardWorld(t, scale)
				base := heapAfterGC()
				w.createNamespaces(t.Context())
				startKubelet(w, t)
				for i := range n {
					w.startReplica(fmt.Sprintf("r%d", i), cf.mode)
				}
				w.waitFor("ranges assigned", func() bool { return w.assigned(n) }, 5*time.Minute)
				cpu0, t0 := cpuTime(), time.Now()
				w.createDeployments(t.Context())
				conv := w.waitConverged(t.Context(), "nginx:1.27", 4*time.Hour)
				cpu := cpuTime() - cpu0
				syncs, received := 0.0, 0.0
				var per []string
				for _, name := range w.order {
					r := w.replicas[name]
					s := syncsOf(r.metrics)
					ev := metricValue(r.metrics, "ctrlkit_watch_events_received_total", "", "")
					objs := metricValue(r.metrics, "ctrlkit_informer_objects", "", "")
					syncs, received = syncs+s, received+ev
					per = append(per, fmt.Sprintf("%s: %d ranges, %.0f objects, %.0f watch events", name,
						int(metricValue(r.metrics, "ctrlkit_shard_owned_ranges", "", "")), objs, ev))
				}
				_ = t0
				// Memory: each replica's share of the heap, by killing them
				// one after the other (their Leases have not expired: no
				// other replica takes their ranges meanwhile).
				synctest.Wait()
				all := heapAfterGC()
				var mem []string
				prev := all
				for _, name := range w.order {
					w.kill(name)
					synctest.Wait() // its goroutines have wound down
					h := heapAfterGC()
					mem = append(mem, fmt.Sprintf("%s %.1f MiB", name, float64(int64(prev)-int64(h))/(1<<20)))
					prev = h
				}
				report(t, "%d shards (%s): %d Deployments × %d in %d namespaces: converged in %v virtual, %.0f syncs (%.1f/s virtual), CPU %v; watch events received %.0f; heap %.1f MiB over the cluster alone; per replica: %s; informer memory: %s",
					n, cf.mode, scale.deployments, scale.replicas, scale.namespaces, conv.Round(time.Second), syncs, syncs/conv.Seconds(), cpu.Round(time.Millisecond),
					received, float64(all-base)/(1<<20), strings.Join(per, "; "), strings.Join(mem, ", "))
				if o := w.outsideTenure(); len(o) > 0 {
					t.Errorf("%d writes outside their replica's tenure, e.g. %v", len(o), o[:min(5, len(o))])
				}
			})
		})
	}
}

// TestShardedKillMidRollout kills a replica during a rollout and starts
// another: no write outside a replica's ranges (so no two replicas write
// one namespace at once), no pod lost or extra, every Deployment rolls
// out, and the killed replica's ranges move within the lease duration
// plus 2 s.
func TestShardedKillMidRollout(t *testing.T) {
	scale, full := benchScale()
	n := 3
	if full {
		n = 4
	}
	synctest.Test(t, func(t *testing.T) {
		w := newShardWorld(t, scale)
		w.createNamespaces(t.Context())
		startKubelet(w, t)
		for i := range n {
			w.startReplica(fmt.Sprintf("r%d", i), kube.SelectorAuto)
		}
		w.waitFor("ranges assigned", func() bool { return w.assigned(n) }, 5*time.Minute)
		w.createDeployments(t.Context())
		w.waitConverged(t.Context(), "nginx:1.27", 4*time.Hour)
		w.rollout(t.Context(), "nginx:1.28")
		time.Sleep(3 * time.Second) // mid-rollout
		if ok, _ := w.converged(t.Context(), "nginx:1.28"); ok {
			t.Fatal("the rollout finished before the kill: the test kills nothing mid-rollout")
		}
		w.kill("r1")
		moved := w.waitFor("r1's ranges reassigned", func() bool { return w.noEntryOf("r1") && w.assigned(n-1) }, 2*time.Minute)
		time.Sleep(5 * time.Second)
		w.startReplica("r-new", kube.SelectorAuto)
		conv := w.waitConverged(t.Context(), "nginx:1.28", 4*time.Hour)
		w.waitFor("ranges rebalanced", func() bool { return w.assigned(n) }, 2*time.Minute)
		out := w.outsideTenure()
		report(t, "kill mid-rollout (%d shards, %d Deployments × %d): r1's ranges reassigned %v after the kill (lease duration 15 s); rollout done %v after; %d writes outside their replica's ranges",
			n, scale.deployments, scale.replicas, moved, conv.Round(time.Second), len(out))
		if moved > 17*time.Second {
			t.Errorf("ranges reassigned %v after the kill; want within the lease duration + 2 s", moved)
		}
		if len(out) > 0 {
			t.Errorf("%d writes outside their replica's tenure, e.g. %v", len(out), out[:min(5, len(out))])
		}
		for _, name := range append([]string(nil), w.order...) {
			if _, ok := w.replicas[name]; ok {
				w.stop(name)
			}
		}
	})
}
