package deployment_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// source is an informer source with a fixed initial list and a fake watch.
func source[T informer.Object](items ...T) (*informer.Informer[T], *watch.FakeWatcher) {
	fw := watch.NewFake()
	lw := informer.ListWatchFuncs[T]{
		ListFunc:  func(context.Context) ([]T, string, error) { return items, "1", nil },
		WatchFunc: func(context.Context, string) (watch.Interface, error) { return fw, nil },
	}
	return informer.New[T](lw, informer.Config[T]{}), fw
}

// controllerRig runs a Controller whose reconciler reports every key it is
// given on calls, and fails with err(key) if set.
type controllerRig struct {
	calls  chan types.NamespacedName
	fc     *clock.Fake
	dw     *watch.FakeWatcher
	rsw    *watch.FakeWatcher
	podw   *watch.FakeWatcher
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func startController(t *testing.T, ds []*appsv1.Deployment, rss []*appsv1.ReplicaSet, fail func(types.NamespacedName) error) *controllerRig {
	t.Helper()
	r := &controllerRig{calls: make(chan types.NamespacedName, 100), fc: clock.NewFake(t0)}
	dInf, dw := source(ds...)
	rsInf, rsw := source(rss...)
	podInf, podw := source[*corev1.Pod]()
	r.dw, r.rsw, r.podw = dw, rsw, podw
	c, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Clock: r.fc, MaxRetries: 3, RateLimiter: &noDelay{n: map[types.NamespacedName]int{}},
		Reconciler: reconcile.Func(func(_ context.Context, key types.NamespacedName) (deployment.Result, error) {
			r.calls <- key
			if fail != nil {
				return deployment.Result{}, fail(key)
			}
			return deployment.Result{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	for _, run := range []func(context.Context) error{dInf.Run, rsInf.Run, podInf.Run, c.Run} {
		r.done.Go(func() { _ = run(ctx) })
	}
	t.Cleanup(func() { r.cancel(); r.done.Wait() })
	return r
}

func (r *controllerRig) next(t *testing.T) types.NamespacedName {
	t.Helper()
	select {
	case k := <-r.calls:
		return k
	case <-time.After(10 * time.Second):
		t.Fatal("no reconcile within 10s")
		return types.NamespacedName{}
	}
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
	// The initial list enqueues both Deployments (and db again for its RS).
	seen := map[string]bool{}
	for len(seen) < 2 {
		seen[r.next(t).Name] = true
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
			for r.next(t).Name != tt.want { // earlier events may still be draining
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
	for i := 0; i < 4; i++ { // the first try and 3 retries
		if got := r.next(t).Name; got != "web" {
			t.Fatalf("call %d: reconciled %s; want web", i, got)
		}
	}
	other := newDeployment(1, "web:v1")
	other.Name, other.ResourceVersion = "other", "5"
	r.dw.Add(other)
	if got := r.next(t).Name; got != "other" {
		t.Errorf("reconciled %s after dropping web; want other", got)
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
