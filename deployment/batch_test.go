package deployment_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// With a BatchPeriod, ReplicaSet status changes wake the Deployment once,
// a period after the first; a spec change wakes it at once.
func TestControllerBatchPeriod(t *testing.T) {
	web := newDeployment(3, "web:v1")
	web.UID = "web-uid"
	rs := owned("web-rs", web, map[string]string{"app": "web"})
	rs.Generation = 1
	dInf, _ := source(web)
	rsInf, rsw := source(rs)
	podInf, _ := source[*corev1.Pod]()
	fc := clock.NewFake(t0)
	calls := make(chan types.NamespacedName, 100)
	c, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Clock: fc, BatchPeriod: 50 * time.Millisecond,
		Reconciler: reconcile.Func(func(_ context.Context, key types.NamespacedName) (deployment.Result, error) {
			calls <- key
			return deployment.Result{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{dInf.Run, rsInf.Run, podInf.Run, c.Run} {
		wg.Go(func() { _ = run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	next := func() types.NamespacedName {
		t.Helper()
		select {
		case k := <-calls:
			return k
		case <-time.After(10 * time.Second):
			t.Fatal("no reconcile within 10s")
			return types.NamespacedName{}
		}
	}
	none := func(what string) {
		t.Helper()
		select {
		case k := <-calls:
			t.Fatalf("%s: reconciled %v", what, k)
		case <-time.After(50 * time.Millisecond): // wall time: the fake clock has not moved
		}
	}
	next() // the initial lists; the ReplicaSet's may wake web a second time
	select {
	case <-calls:
	case <-time.After(100 * time.Millisecond):
	}
	none("initial")

	// Three status changes: nothing until the period has passed, then one
	// sync.
	for i := range 3 {
		cur := rs.DeepCopy()
		cur.ResourceVersion = string(rune('2' + i))
		cur.Status.ReadyReplicas = int32(i + 1)
		rsw.Modify(cur)
	}
	none("status changes before the batch period")
	for fc.Waiters() == 0 {
		time.Sleep(time.Millisecond) // the handler has not armed the delay yet
	}
	fc.Step(50 * time.Millisecond)
	if k := next(); k.Name != "web" {
		t.Fatalf("reconciled %v; want web", k)
	}
	none("after the batched sync")

	// A spec change (generation) syncs at once.
	cur := rs.DeepCopy()
	cur.ResourceVersion, cur.Generation = "9", 2
	rsw.Modify(cur)
	if k := next(); k.Name != "web" {
		t.Fatalf("reconciled %v; want web", k)
	}
}
