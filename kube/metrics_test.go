package kube

import (
	"strings"
	"testing"
	"time"

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
