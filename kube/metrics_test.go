package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
	"k8s.io/apimachinery/pkg/types"
)

func TestMetricsWrite(t *testing.T) {
	var m Metrics
	m.SetLeader(true)
	m.ObserveSync("deployment", 3*time.Millisecond)
	m.Requests.Add(Request{"create", "pods"})
	lim := m.RateLimiter("replicaset", workqueue.DefaultControllerRateLimiter[types.NamespacedName]())
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	lim.When(key)
	lim.Forget(key)
	m.AddGauge("ctrlkit_informer_objects", `resource="pods"`, func() float64 { return 7 })
	var b strings.Builder
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		`ctrlkit_syncs_total{controller="replicaset",result="error"} 1`,
		`ctrlkit_syncs_total{controller="replicaset",result="success"} 1`,
		`ctrlkit_workqueue_retries_total{name="replicaset"} 1`,
		`ctrlkit_sync_duration_seconds_bucket{controller="deployment",le="0.0025"} 0`,
		`ctrlkit_sync_duration_seconds_bucket{controller="deployment",le="0.005"} 1`,
		`ctrlkit_sync_duration_seconds_count{controller="deployment"} 1`,
		`ctrlkit_api_requests_total{verb="create",resource="pods"} 1`,
		`ctrlkit_leader 1`,
		`# TYPE ctrlkit_informer_objects gauge`,
		`ctrlkit_informer_objects{resource="pods"} 7`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("metrics lack %q; got:\n%s", want, got)
		}
	}
}

// The queue hook, installed on a real work queue, keeps the depth, counts
// adds, and records waits and syncs.
func TestMetricsQueue(t *testing.T) {
	var m Metrics
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	wq := workqueue.New(workqueue.Config[string]{Name: "deployment", Clock: fc, Metrics: m.Queue("deployment")})
	defer wq.ShutDown()
	wq.Add("a")
	wq.Add("b")
	wq.Add("a") // coalesced
	fc.Step(20 * time.Millisecond)
	k, _ := wq.Get()
	fc.Step(3 * time.Millisecond)
	wq.Done(k)
	var b strings.Builder
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		`ctrlkit_workqueue_depth{name="deployment"} 1`,
		`ctrlkit_workqueue_adds_total{name="deployment"} 2`,
		`ctrlkit_workqueue_queue_duration_seconds_bucket{name="deployment",le="0.01"} 0`,
		`ctrlkit_workqueue_queue_duration_seconds_bucket{name="deployment",le="0.025"} 1`,
		`ctrlkit_workqueue_queue_duration_seconds_count{name="deployment"} 1`,
		`ctrlkit_sync_duration_seconds_bucket{controller="deployment",le="0.0025"} 0`,
		`ctrlkit_sync_duration_seconds_bucket{controller="deployment",le="0.005"} 1`,
		`# TYPE ctrlkit_workqueue_queue_duration_seconds histogram`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("metrics lack %q; got:\n%s", want, got)
		}
	}
}
