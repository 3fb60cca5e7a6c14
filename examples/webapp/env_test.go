package webapp_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	"github.com/ctrlkit/ctrlkit/examples/webapp"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// env is a WebApp controller on an in-memory cluster: the ReplicaSet
// controller and a kubelet run there, and the WebApp controller is the
// Deployment controller's Reconciler for WebApps, fed by its event rules
// (Kind WebApp) from the cluster's ReplicaSet and pod informers and by the
// WebApp store's changes.
type env struct {
	t      *testing.T
	ctx    context.Context
	c      *memcluster.Cluster
	apps   *store
	r      *deployment.Reconciler
	queue  *workqueue.Queue[types.NamespacedName]
	synced atomic.Int64 // syncs finished

	mu     sync.Mutex
	events []string
	frozen bool // assertConverged: changes no longer enqueue (a write loop must not spin)
}

func newEnv(t *testing.T) *env {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1})
	rsInf := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	podInf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	rsc, err := replicaset.NewController(replicaset.ControllerConfig{ReplicaSets: rsInf, Pods: podInf,
		Client: memcluster.ControllerClient{Cluster: c}, Clock: fc, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	rss, err := reconcile.FromCache(rsInf.Cache())
	if err != nil {
		t.Fatal(err)
	}
	pods, err := reconcile.FromCache(podInf.Cache())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, c: c, apps: &store{apps: map[types.NamespacedName]*webapp.WebApp{}},
		queue: workqueue.New(workqueue.Config[types.NamespacedName]{Name: "webapp", Clock: fc})}
	e.apps.changed = func(k types.NamespacedName) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.frozen {
			e.queue.Add(k)
		}
	}
	rules := deployment.EventRules{Deployments: deployment.WorkloadViews[*webapp.WebApp](e.apps), ReplicaSets: rss, Kind: webapp.Kind.Kind}
	add := func(es []reconcile.Enqueue) {
		for _, en := range es {
			e.queue.Add(en.Key)
		}
	}
	// The one worker is announced to the queue (its items are then work
	// the fake clock waits for) once both handlers have seen their
	// informer's first list.
	var left atomic.Int32
	left.Store(2)
	synced := func() {
		if left.Add(-1) == 0 {
			e.queue.Serve(1)
		}
	}
	for _, reg := range []func() (*informer.Registration, error){
		func() (*informer.Registration, error) {
			return rsInf.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
				OnAdd:    func(rs *appsv1.ReplicaSet) { add(rules.ReplicaSetAdded(ctx, rs)) },
				OnUpdate: func(old, rs *appsv1.ReplicaSet) { add(rules.ReplicaSetUpdated(ctx, old, rs)) },
				OnDelete: func(d informer.Deleted[*appsv1.ReplicaSet]) { add(rules.ReplicaSetDeleted(ctx, d.Obj)) },
				OnSynced: synced,
			})
		},
		func() (*informer.Registration, error) {
			return podInf.AddHandler(informer.Handler[*corev1.Pod]{
				OnDelete: func(d informer.Deleted[*corev1.Pod]) { add(rules.PodDeleted(ctx, d.Obj)) },
				OnSynced: synced,
			})
		},
	} {
		if _, err := reg(); err != nil {
			t.Fatal(err)
		}
	}
	e.r, err = deployment.NewWorkloadReconciler(deployment.WorkloadConfig[*webapp.WebApp]{
		Kind:        webapp.Kind,
		Workloads:   e.apps,
		ReplicaSets: rss,
		Pods:        pods,
		Client:      client{ControllerClient: memcluster.ControllerClient{Cluster: c}, store: e.apps},
		Events: deployment.EventRecorderFunc(func(obj runtime.Object, typ, reason, msg string) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.events = append(e.events, fmt.Sprintf("%T %s %s", obj, reason, msg))
		}),
		Clock: fc,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []func(context.Context) error{rsInf.Run, podInf.Run, rsc.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
		})
	}
	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{}) // built before the simulation runs
	wg.Go(func() { kubelet.Run(ctx) })
	wg.Go(func() { <-ctx.Done(); e.queue.ShutDown() })
	wg.Go(func() {
		<-rsInf.Synced()
		<-podInf.Synced()
		for {
			k, shutdown := e.queue.Get()
			if shutdown {
				return
			}
			res, err := e.r.Reconcile(ctx, k)
			switch {
			case err == nil:
				e.queue.Forget(k)
				if res.RequeueAfter > 0 {
					e.queue.AddAfter(k, res.RequeueAfter)
				}
			case reconcile.IsTerminal(err):
				t.Errorf("Reconcile(%s): %v", k, err)
				e.queue.Forget(k)
			default:
				e.queue.AddRateLimited(k)
			}
			e.synced.Add(1)
			e.queue.Done(k) // last: what the sync started is accounted for
		}
	})
	return e
}

var key = types.NamespacedName{Namespace: "default", Name: "web"}

// syncUntil runs the cluster in virtual time until done holds for the
// WebApp.
func (e *env) syncUntil(done func(w *webapp.WebApp) bool) {
	e.t.Helper()
	err := e.c.RunUntil(e.ctx, func() bool {
		w, err := e.apps.Get(e.ctx, key)
		return err == nil && done(w)
	}, time.Hour)
	if err != nil {
		w, _ := e.apps.Get(e.ctx, key)
		e.t.Fatalf("waiting: %v; WebApp status %+v", err, w.Status)
	}
}

// rolledOut holds when kubectl rollout status would say the WebApp is
// rolled out with image.
func rolledOut(image string) func(w *webapp.WebApp) bool {
	return func(w *webapp.WebApp) bool {
		d := &appsv1.Deployment{ObjectMeta: w.ObjectMeta, Spec: w.DeploymentSpec(), Status: w.DeploymentStatus()}
		st, err := rollout.Status(d, 0)
		return err == nil && st.Done && w.Spec.Image == image
	}
}

// replicaSets describes the cluster's ReplicaSets: image, revision,
// replicas and controller, by name.
func (e *env) replicaSets() []string {
	rss, _, err := e.c.ReplicaSets("default").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, rs := range rss {
		ref := metav1.GetControllerOf(rs)
		out = append(out, fmt.Sprintf("%s rev=%s replicas=%d owner=%s/%s %s", rs.Spec.Template.Spec.Containers[0].Image,
			rs.Annotations[rollout.RevisionAnnotation], *rs.Spec.Replicas, ref.APIVersion, ref.Kind, ref.Name))
	}
	slices.Sort(out)
	return out
}

// assertConverged lets the settled WebApp be synced three more times and
// checks that nothing is written: no status, no ReplicaSet. Meanwhile
// writes do not enqueue the WebApp, so a write loop cannot spin.
func (e *env) assertConverged() {
	e.t.Helper()
	if err := e.c.Settle(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.frozen = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.frozen = false
		e.mu.Unlock()
	}()
	e.apps.takeWrites()
	before := e.replicaSetVersions()
	for range 3 {
		n := e.synced.Load()
		e.queue.Add(key)
		if err := e.c.RunUntil(e.ctx, func() bool { return e.synced.Load() > n }, time.Hour); err != nil {
			e.t.Fatal(err)
		}
	}
	if w := e.apps.takeWrites(); len(w) > 0 {
		e.t.Errorf("a converged WebApp was written again: %v", w)
	}
	if after := e.replicaSetVersions(); !maps.Equal(before, after) {
		e.t.Errorf("a converged WebApp's ReplicaSets were written again: %v → %v", before, after)
	}
}

func (e *env) replicaSetVersions() map[string]string {
	rss, _, err := e.c.ReplicaSets("default").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	m := map[string]string{}
	for _, rs := range rss {
		m[rs.Name] = rs.ResourceVersion
	}
	return m
}
