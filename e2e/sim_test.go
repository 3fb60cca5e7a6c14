package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// simConfig describes a simulation run by simulate: Deployments created at
// once, rolled out, then (if ToImage is set) updated to a new image and
// rolled out again, with both controllers, their informers and a kubelet
// wired as a user would wire them.
type simConfig struct {
	Deployments int
	Replicas    int32
	Strategy    appsv1.DeploymentStrategyType // default RollingUpdate 25%/25%
	ToImage     string                        // the update; none if empty
	Model       memcluster.PodModel           // default: start 1s, ready 2s, stop 1s
	Deadline    int32                         // progressDeadlineSeconds; 0: the default
	// Deterministic runs on clock.NewDeterministic, otherwise on
	// clock.NewFake (the work of an instant runs concurrently).
	Deterministic bool
	Workers       int // per controller; 0 means 5
	// Trace records every event of both controllers; off for the
	// benchmark, which measures the library, not the harness.
	Trace bool
}

// simResult is what a simulation did.
type simResult struct {
	// Phases are the virtual durations of the rollout and the update.
	Phases []time.Duration
	// Events are the controllers' events, with their virtual time, in the
	// order they were recorded (Trace only).
	Events []string
	// Final is the final state: every Deployment's status and its
	// ReplicaSets' sizes, and every pod's owner and phase, sorted.
	Final []string
}

// simulate runs cfg and returns what happened. A phase ends when every
// Deployment's rollout is over: complete, or past its progress deadline.
func simulate(tb testing.TB, cfg simConfig) simResult {
	tb.Helper()
	var fc *clock.Fake
	if cfg.Deterministic {
		fc = clock.NewDeterministic(epoch)
	} else {
		fc = clock.NewFake(epoch)
	}
	if cfg.Workers == 0 {
		cfg.Workers = 5
	}
	if cfg.Model == nil {
		cfg.Model = memcluster.FixedModel(memcluster.PodBehavior{StartDelay: time.Second, ReadyDelay: 2 * time.Second, ShutdownDelay: time.Second})
	}
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1,
		WatchBuffer: 1 << 30}) // every watcher here keeps up; none may be cut off
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()

	var res simResult
	var mu sync.Mutex
	record := func(obj runtime.Object, eventType, reason, message string) {
		if !cfg.Trace {
			return
		}
		m, _ := obj.(metav1.Object)
		line := fmt.Sprintf("+%v %s/%s %s %s: %s", fc.Now().Sub(epoch), m.GetNamespace(), m.GetName(), eventType, reason, message)
		mu.Lock()
		res.Events = append(res.Events, line)
		mu.Unlock()
	}

	client := memcluster.ControllerClient{Cluster: c}
	dInf := informer.New(c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: fc})
	rsInf := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	podInf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	dc, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Client: client, Clock: fc, Workers: cfg.Workers,
		Events: deployment.EventRecorderFunc(record),
	})
	if err != nil {
		tb.Fatal(err)
	}
	rc, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: rsInf, Pods: podInf, Client: client, Clock: fc, Workers: cfg.Workers,
		Events: replicaset.EventRecorderFunc(record),
	})
	if err != nil {
		tb.Fatal(err)
	}
	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{Model: cfg.Model})

	// Count the Deployments whose rollout of the current image is over
	// with the Deployment informer, rather than listing all of them at
	// every instant.
	var image atomic.Value
	image.Store("app:1")
	var over atomic.Int64
	var seen sync.Map // UID+image → counted
	count := func(d *appsv1.Deployment) {
		img := d.Spec.Template.Spec.Containers[0].Image
		if img != image.Load() {
			return
		}
		st, err := rollout.Status(d, 0)
		if (err == nil && st.Done) || st.Reason == rollout.StatusDeadlineExceeded {
			if _, dup := seen.LoadOrStore(string(d.UID)+img, true); !dup {
				over.Add(1)
			}
		}
	}
	if _, err := dInf.AddHandler(informer.Handler[*appsv1.Deployment]{
		OnAdd: count, OnUpdate: func(_, d *appsv1.Deployment) { count(d) },
	}); err != nil {
		tb.Fatal(err)
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

	phase := func(what string) {
		tb.Helper()
		start := fc.Now()
		err := c.RunUntil(ctx, func() bool { return over.Load() == int64(cfg.Deployments) }, 24*time.Hour)
		select {
		case err := <-errc:
			tb.Fatal(err)
		default:
		}
		if err != nil {
			tb.Fatalf("%s: %d of %d Deployments rolled out at +%v: %v\n%s", what, over.Load(), cfg.Deployments, fc.Now().Sub(epoch), err, scaleDiag(ctx, c))
		}
		res.Phases = append(res.Phases, fc.Now().Sub(start))
	}

	deploys := c.Deployments(ns)
	for i := range cfg.Deployments {
		d := newDeployment(fmt.Sprintf("d%05d", i), cfg.Replicas, "app:1")
		if cfg.Strategy == appsv1.RecreateDeploymentStrategyType {
			d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
		}
		if cfg.Deadline > 0 {
			d.Spec.ProgressDeadlineSeconds = &cfg.Deadline
		}
		if _, err := deploys.Create(ctx, d, metav1.CreateOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	phase("rollout")
	if cfg.ToImage != "" {
		image.Store(cfg.ToImage)
		over.Store(0)
		patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, cfg.ToImage)
		for i := range cfg.Deployments {
			if _, err := deploys.Patch(ctx, fmt.Sprintf("d%05d", i), types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
				tb.Fatal(err)
			}
		}
		phase("update")
	}
	res.Final = finalState(ctx, tb, c)
	return res
}

// finalState describes the cluster's objects, sorted, with the fields a
// rollout decides: sizes, revisions, statuses, conditions and owners.
func finalState(ctx context.Context, tb testing.TB, c *memcluster.Cluster) []string {
	tb.Helper()
	ds, _, err1 := c.Deployments("").List(ctx, metav1.ListOptions{})
	rss, _, err2 := c.ReplicaSets("").List(ctx, metav1.ListOptions{})
	pods, _, err3 := c.Pods("").List(ctx, metav1.ListOptions{})
	if err := errors.Join(err1, err2, err3); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		var conds []string
		for _, cd := range d.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s(%s)", cd.Type, cd.Status, cd.Reason))
		}
		st := d.Status
		out = append(out, fmt.Sprintf("deployment %s gen=%d observed=%d replicas=%d updated=%d ready=%d available=%d %s",
			d.Name, d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, strings.Join(conds, " ")))
	}
	for _, rs := range rss {
		out = append(out, fmt.Sprintf("replicaset %s revision=%s spec=%d replicas=%d ready=%d available=%d",
			rs.Name, rs.Annotations[rollout.RevisionAnnotation], *rs.Spec.Replicas, rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas))
	}
	// Pod names are drawn at random in the order of their creation, which
	// concurrent controllers make at the same instant in any order: count
	// the pods per owner and phase instead.
	counts := map[string]int{}
	for _, p := range pods {
		owner := "-"
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
			owner = ref.Name
		}
		counts[fmt.Sprintf("pods of %s %s ready=%v terminating=%v", owner, p.Status.Phase, podReady(p), p.DeletionTimestamp != nil)]++
	}
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%s: %d", k, n))
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}
