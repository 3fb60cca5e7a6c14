package deployment_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// source is an informer on fc with a fixed initial list and a fake watch
// whose events are tracked work on fc: once fc has settled, the informer
// has applied every event fed and its handlers have returned.
func source[T informer.Object](fc *clock.Fake, items ...T) (*informer.Informer[T], *fakewatch.Watch) {
	fw := fakewatch.New(fc, "test watch")
	lw := informer.ListWatchFuncs[T]{
		ListFunc:  func(context.Context) ([]T, string, error) { return items, "1", nil },
		WatchFunc: func(context.Context, string) (watch.Interface, error) { return fw, nil },
	}
	return informer.New[T](lw, informer.Config[T]{Clock: fc}), fw
}

// settle lets the work of the current instant finish: every event fed is
// applied, every key queued is synced, nothing else can happen until the
// clock moves.
func settle(t *testing.T, fc *clock.Fake) {
	t.Helper()
	if err := fc.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// controllerRig runs a Controller whose reconciler records every key it is
// given, and fails with fail(key) if set. Everything runs on fc.
type controllerRig struct {
	fc   *clock.Fake
	dw   *fakewatch.Watch
	rsw  *fakewatch.Watch
	podw *fakewatch.Watch

	mu    sync.Mutex
	calls []string // names reconciled since the last settle
}

func startController(t *testing.T, ds []*appsv1.Deployment, rss []*appsv1.ReplicaSet, fail func(types.NamespacedName) error) *controllerRig {
	t.Helper()
	r := &controllerRig{fc: clock.NewFake(t0)}
	dInf, dw := source(r.fc, ds...)
	rsInf, rsw := source(r.fc, rss...)
	podInf, podw := source[*corev1.Pod](r.fc)
	r.dw, r.rsw, r.podw = dw, rsw, podw
	c, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Clock: r.fc, MaxRetries: 3, RateLimiter: &noDelay{n: map[types.NamespacedName]int{}},
		Reconciler: reconcile.Func(func(_ context.Context, key types.NamespacedName) (reconcile.Result, error) {
			r.mu.Lock()
			r.calls = append(r.calls, key.Name)
			r.mu.Unlock()
			if fail != nil {
				return reconcile.Result{}, fail(key)
			}
			return reconcile.Result{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, dInf.Run, rsInf.Run, podInf.Run, c.Run)
	return r
}

// run runs each function on its own goroutine until the test ends.
func run(t *testing.T, runs ...func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(func() { _ = run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// settle lets the clock settle and returns the names reconciled since the
// last call, in order.
func (r *controllerRig) settle(t *testing.T) []string {
	t.Helper()
	settle(t, r.fc)
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := r.calls
	r.calls = nil
	return calls
}

func owned(name string, d *appsv1.Deployment, lbls map[string]string) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Labels: lbls, ResourceVersion: "1"}}
	if d != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	}
	return rs
}

func TestControllerHandlers(t *testing.T) {
	web := newDeployment(1, "web:v1")
	web.UID = "web-uid"
	db := newDeployment(1, "db:v1")
	db.Name, db.UID = "db", "db-uid"
	db.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	db.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	r := startController(t, []*appsv1.Deployment{web, db}, []*appsv1.ReplicaSet{owned("db-rs", db, map[string]string{"app": "db"})}, nil)
	// The initial lists enqueue both Deployments, and db again for its
	// ReplicaSet; the workers start once every handler has seen its list,
	// so that second add joins the first: one sync each.
	got := r.settle(t)
	slices.Sort(got)
	if diff := cmp.Diff([]string{"db", "web"}, got); diff != "" {
		t.Fatalf("syncs after the initial lists (-want +got):\n%s", diff)
	}
	tests := []struct {
		name  string
		event func()
		want  string
	}{
		{"owned ReplicaSet added", func() { r.rsw.Add(owned("web-rs", web, map[string]string{"app": "web"})) }, "web"},
		{"orphan ReplicaSet matching a selector", func() { r.rsw.Add(owned("stray", nil, map[string]string{"app": "web"})) }, "web"},
		{"pod of a Recreate Deployment deleted", func() {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1",
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owned("db-rs", db, nil), appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}
			r.podw.Add(pod)
			r.podw.Delete(pod)
		}, "db"},
		{"Deployment updated", func() {
			d := web.DeepCopy()
			d.ResourceVersion = "2"
			r.dw.Modify(d)
		}, "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.event()
			if diff := cmp.Diff([]string{tt.want}, r.settle(t)); diff != "" {
				t.Errorf("syncs (-want +got):\n%s", diff)
			}
		})
	}
}

// A failing key is retried MaxRetries times with backoff, then dropped.
func TestControllerRetries(t *testing.T) {
	web := newDeployment(1, "web:v1")
	r := startController(t, []*appsv1.Deployment{web}, nil, func(key types.NamespacedName) error {
		if key.Name == "web" {
			return errors.New("boom")
		}
		return nil
	})
	// The first try and 3 retries, then nothing: the key is dropped.
	if diff := cmp.Diff([]string{"web", "web", "web", "web"}, r.settle(t)); diff != "" {
		t.Fatalf("syncs of a failing key (-want +got):\n%s", diff)
	}
	if n := r.fc.Waiters(); n != 0 {
		t.Errorf("%d timers armed after the key was dropped; want none", n)
	}
	other := newDeployment(1, "web:v1")
	other.Name, other.ResourceVersion = "other", "5"
	r.dw.Add(other)
	if diff := cmp.Diff([]string{"other"}, r.settle(t)); diff != "" {
		t.Errorf("syncs after dropping web (-want +got):\n%s", diff)
	}
}

// noDelay retries at once and counts failures.
type noDelay struct {
	mu sync.Mutex
	n  map[types.NamespacedName]int
}

func (l *noDelay) When(k types.NamespacedName) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[k]++
	return 0
}

func (l *noDelay) Forget(k types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.n, k)
}

func (l *noDelay) NumRequeues(k types.NamespacedName) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[k]
}
