package kube

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// samples gathers g and renders each sample as `name{k="v",…} value`
// (histograms as their count and sum, and the cumulative count of the
// bucket le), sorted.
func samples(t *testing.T, g prometheus.Gatherer, le float64) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name := mf.GetName() + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, fmt.Sprintf("%s %g", name, m.GetCounter().GetValue()))
			case dto.MetricType_GAUGE:
				out = append(out, fmt.Sprintf("%s %g", name, m.GetGauge().GetValue()))
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out = append(out, fmt.Sprintf("%s count=%d sum=%g", name, h.GetSampleCount(), h.GetSampleSum()))
				for _, b := range h.GetBucket() {
					if b.GetUpperBound() == le {
						out = append(out, fmt.Sprintf("%s le=%g %d", name, le, b.GetCumulativeCount()))
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// The queue hook, installed on a real work queue, feeds the seven standard
// workqueue series with the name label, and reads the work in progress at
// scrape time.
func TestMetricsQueue(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	wq := workqueue.New(workqueue.Config[string]{Name: "deployment", Clock: fc, Metrics: m.Queue("deployment")})
	defer wq.ShutDown()
	wq.Add("a")
	wq.Add("b")
	wq.Add("a") // coalesced
	fc.Step(20 * time.Millisecond)
	a, _ := wq.Get()
	fc.Step(3 * time.Millisecond)
	wq.Done(a)
	b, _ := wq.Get() // still in progress at the scrape
	fc.Step(2 * time.Second)
	wq.AddRateLimited("c")
	m.Queue("deployment").(interface{ SyncSkipped() }).SyncSkipped()
	got := samples(t, m.Gatherer(), 0.01)
	want := []string{
		`ctrlkit_syncs_skipped_total{controller="deployment"} 1`,
		`workqueue_adds_total{name="deployment"} 2`,
		`workqueue_depth{name="deployment"} 0`,
		`workqueue_longest_running_processor_seconds{name="deployment"} 2`,
		`workqueue_queue_duration_seconds{name="deployment"} count=2 sum=0.043`,
		`workqueue_queue_duration_seconds{name="deployment"} le=0.01 0`,
		`workqueue_retries_total{name="deployment"} 1`,
		`workqueue_unfinished_work_seconds{name="deployment"} 2`,
		`workqueue_work_duration_seconds{name="deployment"} count=1 sum=0.003`,
		`workqueue_work_duration_seconds{name="deployment"} le=0.01 1`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series mismatch (-want +got):\n%s", diff)
	}
	wq.Done(b)
}

// The standard histograms keep client-go's buckets, which dashboards'
// histogram_quantile queries and recording rules assume.
func TestMetricsBuckets(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Queue("replicaset").Finished(0, time.Millisecond)
	m.Queue("replicaset").Started(0, time.Millisecond)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	if _, err := (&http.Client{Transport: m.WrapTransport(http.DefaultTransport)}).Get(srv.URL); err != nil {
		t.Fatal(err)
	}
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]float64{}
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			got[mf.GetName()] = append(got[mf.GetName()], b.GetUpperBound())
		}
	}
	wq := []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10}
	want := map[string][]float64{
		"workqueue_queue_duration_seconds":     wq,
		"workqueue_work_duration_seconds":      wq,
		"rest_client_request_duration_seconds": {0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	}
	approx := cmp.Comparer(func(a, b float64) bool { return a == b || (a-b)/b < 1e-9 && (b-a)/b < 1e-9 })
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("buckets mismatch (-want +got):\n%s", diff)
	}
}

// The transport, the rate limiter wrapper, the leader gauge and the
// informer counts feed the client-go and ctrlkit series.
func TestMetricsRequestsSyncsLeader(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("a second NewMetrics on the same registry succeeded; want a registration error")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: m.WrapTransport(http.DefaultTransport)}
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments"},
		{http.MethodPut, "/apis/apps/v1/namespaces/ns/deployments/web/status"},
	} {
		r, err := http.NewRequest(req.method, srv.URL+req.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	lim := m.RateLimiter("replicaset", workqueue.DefaultControllerRateLimiter[types.NamespacedName]())
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	lim.When(key)
	lim.Forget(key)
	m.SetLeader("ctrlkit-controller", true)
	m.setObjects("pods", func() int { return 7 })
	host := strings.TrimPrefix(srv.URL, "http://")
	got := slices.DeleteFunc(samples(t, m.Gatherer(), -1), func(s string) bool {
		return strings.HasPrefix(s, "rest_client_request_duration_seconds")
	})
	want := []string{
		`ctrlkit_api_conflicts_total{resource="deployments/status",verb="update"} 1`,
		`ctrlkit_api_requests_total{resource="deployments",verb="list"} 1`,
		`ctrlkit_api_requests_total{resource="deployments/status",verb="update"} 1`,
		`ctrlkit_informer_objects{resource="pods"} 7`,
		`ctrlkit_syncs_total{controller="replicaset",result="error"} 1`,
		`ctrlkit_syncs_total{controller="replicaset",result="success"} 1`,
		`leader_election_master_status{name="ctrlkit-controller"} 1`,
		fmt.Sprintf(`rest_client_requests_total{code="200",host=%q,method="GET"} 1`, host),
		fmt.Sprintf(`rest_client_requests_total{code="409",host=%q,method="PUT"} 1`, host),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series mismatch (-want +got):\n%s", diff)
	}
	lat := samples(t, m.Gatherer(), -1)
	if !slices.ContainsFunc(lat, func(s string) bool {
		return strings.HasPrefix(s, fmt.Sprintf(`rest_client_request_duration_seconds{host=%q,verb="PUT"} count=1 `, host))
	}) {
		t.Errorf("no PUT latency observed: %q", lat)
	}

	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "\n"+`leader_election_master_status{name="ctrlkit-controller"} 1`+"\n") {
		t.Errorf("ServeHTTP lacks the leader gauge:\n%s", rec.Body)
	}
}
