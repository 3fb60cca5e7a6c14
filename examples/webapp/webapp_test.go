package webapp_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

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

// store is a tiny API for WebApps: resourceVersions, Conflict on a stale
// write, a count of writes.
type store struct {
	mu     sync.Mutex
	rv     int
	apps   map[types.NamespacedName]*webapp.WebApp
	writes []string // "status web", "spec web"
	// changed is the store's watch: called after every change.
	changed func(types.NamespacedName)
}

func (s *store) Get(_ context.Context, key types.NamespacedName) (*webapp.WebApp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.apps[key]
	if !ok {
		return nil, apierrors.NewNotFound(webapp.Kind.GroupVersion().WithResource("webapps").GroupResource(), key.Name)
	}
	return w.DeepCopy(), nil
}

func (s *store) List(_ context.Context, ns string, sel labels.Selector) ([]*webapp.WebApp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*webapp.WebApp
	for _, w := range s.apps {
		if (ns == "" || w.Namespace == ns) && (sel == nil || sel.Matches(labels.Set(w.Labels))) {
			out = append(out, w.DeepCopy())
		}
	}
	return out, nil
}

// put stores w as a user would (a spec write bumps the generation).
func (s *store) put(w *webapp.WebApp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	w = w.DeepCopy()
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	if old, ok := s.apps[key]; ok {
		w.Generation, w.UID, w.Status = old.Generation+1, old.UID, old.Status
	} else {
		w.Generation, w.UID = 1, types.UID("uid-"+w.Name)
	}
	w.ResourceVersion = strconv.Itoa(s.rv)
	s.apps[key] = w
	s.notify(key)
}

// notify calls changed for key; the caller holds mu.
func (s *store) notify(key types.NamespacedName) {
	if s.changed != nil {
		s.changed(key)
	}
}

func (s *store) write(w *webapp.WebApp, what string, apply func(stored, w *webapp.WebApp)) (*webapp.WebApp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	cur, ok := s.apps[key]
	if !ok {
		return nil, apierrors.NewNotFound(webapp.Kind.GroupVersion().WithResource("webapps").GroupResource(), w.Name)
	}
	if cur.ResourceVersion != w.ResourceVersion {
		return nil, apierrors.NewConflict(webapp.Kind.GroupVersion().WithResource("webapps").GroupResource(), w.Name, errors.New("stale"))
	}
	next := cur.DeepCopy()
	apply(next, w)
	s.rv++
	next.ResourceVersion = strconv.Itoa(s.rv)
	s.apps[key] = next
	s.writes = append(s.writes, what+" "+w.Name)
	s.notify(key)
	return next.DeepCopy(), nil
}

func (s *store) UpdateWorkload(_ context.Context, w *webapp.WebApp) (*webapp.WebApp, error) {
	return s.write(w, "spec", func(next, w *webapp.WebApp) {
		next.Spec, next.Annotations = w.DeepCopy().Spec, maps.Clone(w.Annotations)
		next.Generation++
	})
}

func (s *store) UpdateWorkloadStatus(_ context.Context, w *webapp.WebApp) (*webapp.WebApp, error) {
	return s.write(w, "status", func(next, w *webapp.WebApp) {
		next.Status, next.Annotations = w.DeepCopy().Status, maps.Clone(w.Annotations)
	})
}

func (s *store) takeWrites() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.writes
	s.writes = nil
	return w
}

// client writes WebApps to the store and ReplicaSets to the cluster.
type client struct {
	memcluster.ControllerClient
	*store
}

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
	for _, reg := range []func() (*informer.Registration, error){
		func() (*informer.Registration, error) {
			return rsInf.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
				OnAdd:    func(rs *appsv1.ReplicaSet) { add(rules.ReplicaSetAdded(ctx, rs)) },
				OnUpdate: func(old, rs *appsv1.ReplicaSet) { add(rules.ReplicaSetUpdated(ctx, old, rs)) },
				OnDelete: func(d informer.Deleted[*appsv1.ReplicaSet]) { add(rules.ReplicaSetDeleted(ctx, d.Obj)) },
			})
		},
		func() (*informer.Registration, error) {
			return podInf.AddHandler(informer.Handler[*corev1.Pod]{
				OnDelete: func(d informer.Deleted[*corev1.Pod]) { add(rules.PodDeleted(ctx, d.Obj)) },
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
	var busy atomic.Int32
	c.AddIdleCheck(func() bool { return e.queue.Len() == 0 && busy.Load() == 0 })
	for _, run := range []func(context.Context) error{rsInf.Run, podInf.Run, rsc.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
		})
	}
	wg.Go(func() { memcluster.NewKubelet(c, memcluster.KubeletConfig{}).Run(ctx) })
	wg.Go(func() { <-ctx.Done(); e.queue.ShutDown() })
	wg.Go(func() {
		<-rsInf.Synced()
		<-podInf.Synced()
		for {
			k, shutdown := e.queue.Get()
			if shutdown {
				return
			}
			busy.Add(1)
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
			e.queue.Done(k)
			e.synced.Add(1)
			busy.Add(-1)
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
	if err := e.c.RunUntil(e.ctx, func() bool { return true }, time.Hour); err != nil { // settle
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

func newWebApp(image string, replicas int32) *webapp.WebApp {
	quarter := intOrPercent("25%")
	history, deadline := int32(10), int32(600)
	return &webapp.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: webapp.Spec{Replicas: &replicas, Image: image, RevisionHistoryLimit: &history, ProgressDeadlineSeconds: &deadline,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}}}}
}

func TestRollouts(t *testing.T) {
	e := newEnv(t)
	w := newWebApp("nginx:1.27", 4)
	e.apps.put(w)
	e.syncUntil(rolledOut("nginx:1.27"))
	e.assertConverged()

	// A rolling update.
	w.Spec.Image = "nginx:1.28"
	e.apps.put(w)
	e.syncUntil(rolledOut("nginx:1.28"))
	e.assertConverged()

	// Paused: a template change waits; resumed, it rolls out.
	w.Spec.Paused, w.Spec.Image = true, "nginx:1.29"
	e.apps.put(w)
	e.syncUntil(func(w *webapp.WebApp) bool { return w.Status.ObservedGeneration == w.Generation })
	if got := len(e.replicaSets()); got != 2 {
		t.Errorf("paused WebApp has %d ReplicaSets; want 2 (no new one)", got)
	}
	w.Spec.Paused = false
	e.apps.put(w)
	e.syncUntil(rolledOut("nginx:1.29"))

	// Rollback to revision 1, the way the Deployment controller reads it.
	cur, _ := e.apps.Get(e.ctx, key)
	cur.Annotations = map[string]string{"deprecated.deployment.rollback.to": "1"}
	e.apps.put(cur)
	e.syncUntil(rolledOut("nginx:1.27"))
	e.assertConverged()

	// Recreate.
	cur, _ = e.apps.Get(e.ctx, key)
	cur.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	cur.Spec.Image = "nginx:1.30"
	e.apps.put(cur)
	e.syncUntil(rolledOut("nginx:1.30"))
	e.assertConverged()

	want := []string{
		"nginx:1.27 rev=4 replicas=0 owner=example.ctrlkit.io/v1/WebApp web",
		"nginx:1.28 rev=2 replicas=0 owner=example.ctrlkit.io/v1/WebApp web",
		"nginx:1.29 rev=3 replicas=0 owner=example.ctrlkit.io/v1/WebApp web",
		"nginx:1.30 rev=5 replicas=4 owner=example.ctrlkit.io/v1/WebApp web",
	}
	if got := e.replicaSets(); !slices.Equal(got, want) {
		t.Errorf("ReplicaSets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	final, _ := e.apps.Get(e.ctx, key)
	if final.Annotations[rollout.RevisionAnnotation] != "5" {
		t.Errorf("WebApp revision annotation = %q; want 5", final.Annotations[rollout.RevisionAnnotation])
	}
	if c := rollout.GetCondition(final.Status.DeploymentStatus, appsv1.DeploymentProgressing); c == nil || c.Reason != rollout.ReasonNewReplicaSetAvailable {
		t.Errorf("Progressing = %+v; want NewReplicaSetAvailable", c)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		if !strings.HasPrefix(ev, "*webapp.WebApp ") {
			t.Errorf("event not recorded against the WebApp: %s", ev)
		}
	}
	if !slices.ContainsFunc(e.events, func(s string) bool { return strings.Contains(s, "DeploymentRollback") }) {
		t.Errorf("no rollback event in %v", e.events)
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	e := newEnv(t)
	w := newWebApp("v1", 2)
	one := int32(1)
	w.Spec.RevisionHistoryLimit = &one
	e.apps.put(w)
	e.syncUntil(rolledOut("v1"))
	for _, img := range []string{"v2", "v3"} {
		w.Spec.Image = img
		e.apps.put(w)
		e.syncUntil(rolledOut(img))
	}
	e.syncUntil(func(*webapp.WebApp) bool { return len(e.replicaSets()) == 2 }) // history cleanup
	want := []string{
		"v2 rev=2 replicas=0 owner=example.ctrlkit.io/v1/WebApp web",
		"v3 rev=3 replicas=2 owner=example.ctrlkit.io/v1/WebApp web",
	}
	if got := e.replicaSets(); !slices.Equal(got, want) {
		t.Errorf("ReplicaSets = %q; want %q", got, want)
	}
	e.assertConverged()
}

// lossy is a WebApp whose status loses the conditions' lastUpdateTime:
// every sync would write the status again.
type lossy struct{ webapp.WebApp }

func (l *lossy) SetDeploymentStatus(s appsv1.DeploymentStatus) {
	s = *s.DeepCopy()
	for i := range s.Conditions {
		s.Conditions[i].LastUpdateTime = metav1.Time{}
	}
	l.WebApp.SetDeploymentStatus(s)
}

func (l *lossy) DeepCopyObject() runtime.Object { return &lossy{*l.WebApp.DeepCopy()} }

func TestLossyStatusIsRefused(t *testing.T) {
	w := &lossy{*newWebApp("v1", 1)}
	w.Namespace, w.Name = key.Namespace, key.Name
	r, err := deployment.NewWorkloadReconciler(deployment.WorkloadConfig[*lossy]{
		Kind:        webapp.Kind,
		Workloads:   reconcile.GetterFunc[*lossy](func(context.Context, types.NamespacedName) (*lossy, error) { return w, nil }),
		ReplicaSets: reconcile.ListerFunc[*appsv1.ReplicaSet](func(context.Context, string, labels.Selector) ([]*appsv1.ReplicaSet, error) { return nil, nil }),
		Client:      lossyClient{},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Reconcile(context.Background(), key)
	if !reconcile.IsTerminal(err) || !strings.Contains(err.Error(), "does not keep the status") {
		t.Errorf("Reconcile of a lossy workload: err = %v; want a terminal error about the status", err)
	}
}

type lossyClient struct {
	deployment.WorkloadClient[*lossy]
}

func TestNewWorkloadReconcilerErrors(t *testing.T) {
	for _, cfg := range []deployment.WorkloadConfig[*webapp.WebApp]{
		{Workloads: &store{}, Client: client{}},
		{Kind: webapp.Kind, Client: client{}},
		{Kind: webapp.Kind, Workloads: &store{}},
	} {
		if _, err := deployment.NewWorkloadReconciler(cfg); err == nil {
			t.Errorf("NewWorkloadReconciler(%+v) succeeded; want an error", cfg)
		}
	}
}

func intOrPercent(s string) intstr.IntOrString { return intstr.FromString(s) }
