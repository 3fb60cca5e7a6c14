package deployment_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// With a BatchPeriod, ReplicaSet status changes wake the Deployment once,
// a period after the first; a spec change wakes it at once.
func TestControllerBatchPeriod(t *testing.T) {
	const period = 50 * time.Millisecond
	web := newDeployment(3, "web:v1")
	web.UID = "web-uid"
	rs := owned("web-rs", web, map[string]string{"app": "web"})
	rs.Generation = 1
	fc := clock.NewFake(t0)
	dInf, _ := source(fc, web)
	rsInf, rsw := source(fc, rs)
	podInf, _ := source[*corev1.Pod](fc)
	var mu sync.Mutex
	var calls []string
	c, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Clock: fc, BatchPeriod: period,
		Reconciler: reconcile.Func(func(_ context.Context, key types.NamespacedName) (reconcile.Result, error) {
			mu.Lock()
			calls = append(calls, key.Name)
			mu.Unlock()
			return reconcile.Result{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, dInf.Run, rsInf.Run, podInf.Run, c.Run)
	// expect lets the clock settle, then checks the syncs since the last
	// call and the number of delays armed on the clock.
	expect := func(step string, timers int, want ...string) {
		t.Helper()
		settle(t, fc)
		mu.Lock()
		got := calls
		calls = nil
		mu.Unlock()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: syncs (-want +got):\n%s", step, diff)
		}
		if n := fc.Waiters(); n != timers {
			t.Fatalf("%s: %d timers armed; want %d", step, n, timers)
		}
	}
	// The initial lists: web is added for itself and for its ReplicaSet
	// before the worker starts, so it syncs once.
	expect("initial", 0, "web")

	// Three status changes: nothing until the period has passed, then one
	// sync.
	for i := range 3 {
		cur := rs.DeepCopy()
		cur.ResourceVersion = string(rune('2' + i))
		cur.Status.ReadyReplicas = int32(i + 1)
		rsw.Modify(cur)
	}
	expect("status changes before the batch period", 1)
	fc.Step(period - time.Nanosecond)
	expect("just before the end of the period", 1)
	fc.Step(time.Nanosecond)
	expect("the period is over", 0, "web")

	// A spec change (generation) syncs at once.
	cur := rs.DeepCopy()
	cur.ResourceVersion, cur.Generation = "9", 2
	rsw.Modify(cur)
	expect("spec change", 0, "web")
}
