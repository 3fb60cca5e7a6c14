//go:build e2e

package compare

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// standardSeries are the series a kube-controller-manager dashboard
// queries for the Deployment and ReplicaSet controllers, with the label
// keys its queries use.
var standardSeries = map[string][]string{
	"workqueue_depth":                             {"name"},
	"workqueue_adds_total":                        {"name"},
	"workqueue_queue_duration_seconds":            {"name"},
	"workqueue_work_duration_seconds":             {"name"},
	"workqueue_unfinished_work_seconds":           {"name"},
	"workqueue_longest_running_processor_seconds": {"name"},
	"workqueue_retries_total":                     {"name"},
	"rest_client_requests_total":                  {"code", "host", "method"},
	"rest_client_request_duration_seconds":        {"host", "verb"},
	"leader_election_master_status":               {"name"},
}

// TestMetricsSeries scrapes kube-controller-manager (running the two
// controllers ours replaces) and the ctrlkit-controller binary, each during
// and after a rollout, checks that ours exposes every standard series with
// the labels dashboards query, and diffs the two sets of series names and
// label keys. The diff is reported; series in it must be documented as
// ctrlkit-only (ctrlkit_*) or KCM-only (see kube/README.md).
func TestMetricsSeries(t *testing.T) {
	ctx := context.Background()
	bin := buildController(t)

	if err := cp.StartKCM(ctx, "deployment-controller,replicaset-controller",
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "--leader-elect=true",
		"--leader-elect-resource-name=kcm-metrics-test"); err != nil {
		t.Fatal(err)
	}
	up := newRun(t, ctx, "metrics-upstream")
	stopUp := observe(ctx, up.rec, up.cs, up.ns) // recorder and kubelet
	up.create(webDeployment(3, "nginx:1", "25%", "25%"))
	up.waitComplete()
	up.update(setImage("nginx:2"))
	up.waitComplete()
	kcm := scrapeKCM(t, ctx)
	stopUp()
	if err := cp.StopKCM(ctx); err != nil {
		t.Fatal(err)
	}

	ours := newRun(t, ctx, "metrics-ctrlkit")
	defer observe(ctx, ours.rec, ours.cs, ours.ns)()
	ctl := startController(t, bin, ours.ns, "--leader-elect", "--leader-elect-resource-namespace="+ours.ns,
		"--leader-elect-retry-period=500ms", "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s")
	ours.create(webDeployment(3, "nginx:1", "25%", "25%"))
	ours.waitComplete()
	ours.update(setImage("nginx:2"))
	during := scrape(t, ctx, http.DefaultClient, "http://"+ctl.addr+"/metrics")
	ours.waitComplete()
	after := scrape(t, ctx, http.DefaultClient, "http://"+ctl.addr+"/metrics")
	ctl.stop(t)

	for _, got := range []map[string]*dto.MetricFamily{during, after} {
		for name, keys := range standardSeries {
			mf := got[name]
			if mf == nil || len(mf.GetMetric()) == 0 {
				t.Errorf("ctrlkit-controller /metrics lacks %s", name)
				continue
			}
			if got := labelKeys(mf); !slices.Equal(got, keys) {
				t.Errorf("%s has labels %q; want %q", name, got, keys)
			}
		}
	}
	for _, queue := range []string{"deployment", "replicaset"} {
		if v := value(after["workqueue_adds_total"], "name", queue); v <= 0 {
			t.Errorf(`workqueue_adds_total{name=%q} = %g after a rollout; want > 0`, queue, v)
		}
		if n := histogramCount(after["workqueue_work_duration_seconds"], "name", queue); n == 0 {
			t.Errorf(`workqueue_work_duration_seconds{name=%q} has no observation after a rollout`, queue)
		}
	}
	if v := value(after["leader_election_master_status"], "name", "ctrlkit-controller"); v != 1 {
		t.Errorf(`leader_election_master_status{name="ctrlkit-controller"} = %g; want 1`, v)
	}
	if v := value(after["rest_client_requests_total"], "code", "201"); v <= 0 {
		t.Errorf(`rest_client_requests_total{code="201"} = %g after a rollout; want > 0 (pods created)`, v)
	}

	// The diff, for the series of the two controllers: those of their
	// queues, the REST client and leader election.
	relevant := func(name string, mf *dto.MetricFamily) bool {
		switch {
		case strings.HasPrefix(name, "workqueue_"):
			return slices.ContainsFunc(mf.GetMetric(), func(m *dto.Metric) bool {
				return slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
					return l.GetName() == "name" && (l.GetValue() == "deployment" || l.GetValue() == "replicaset")
				})
			})
		case strings.HasPrefix(name, "rest_client_"), strings.HasPrefix(name, "leader_election_"),
			strings.HasPrefix(name, "ctrlkit_"), strings.HasPrefix(name, "go_"), strings.HasPrefix(name, "process_"):
			return true
		}
		return false
	}
	kcmSet, ourSet := seriesSet(kcm, relevant), seriesSet(after, relevant)
	var onlyKCM, onlyOurs []string
	for s := range kcmSet {
		if !ourSet[s] {
			onlyKCM = append(onlyKCM, s)
		}
	}
	for s := range ourSet {
		if !kcmSet[s] {
			onlyOurs = append(onlyOurs, s)
		}
	}
	slices.Sort(onlyKCM)
	slices.Sort(onlyOurs)
	t.Logf("series of kube-controller-manager's Deployment and ReplicaSet controllers missing from ctrlkit-controller (%d):\n  %s",
		len(onlyKCM), strings.Join(onlyKCM, "\n  "))
	t.Logf("series of ctrlkit-controller that kube-controller-manager lacks (%d):\n  %s", len(onlyOurs), strings.Join(onlyOurs, "\n  "))
	// go_* and process_* depend on the collectors' options and are only
	// reported.
	for _, s := range onlyOurs {
		if !strings.HasPrefix(s, "ctrlkit_") && !strings.HasPrefix(s, "go_") && !strings.HasPrefix(s, "process_") {
			t.Errorf("ctrlkit-controller exposes %s, which is neither a kube-controller-manager series nor ctrlkit_-prefixed", s)
		}
	}
	for _, s := range onlyKCM {
		if name, _, _ := strings.Cut(s, "{"); standardSeries[name] != nil {
			t.Errorf("kube-controller-manager exposes %s; ctrlkit-controller has another label set", s)
		}
	}
	if path := os.Getenv("CTRLKIT_E2E_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "\nMetrics: series only kube-controller-manager exposes: %s\n", strings.Join(onlyKCM, " "))
			fmt.Fprintf(f, "Metrics: series only ctrlkit-controller exposes: %s\n", strings.Join(onlyOurs, " "))
			err = f.Close()
		}
		if err != nil {
			t.Log(err)
		}
	}
}

// scrapeKCM scrapes the kube-controller-manager that StartKCM started, on
// its secure port (self-signed; /metrics allowed without authentication by
// the flags above).
func scrapeKCM(t *testing.T, ctx context.Context) map[string]*dto.MetricFamily {
	t.Helper()
	port, err := os.ReadFile(filepath.Join(cp.Dir, "kcm-port"))
	if err != nil {
		t.Fatal(err)
	}
	// Loopback only, to our own throwaway kube-controller-manager.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return scrape(t, ctx, c, "https://127.0.0.1:"+strings.TrimSpace(string(port))+"/metrics")
}

func scrape(t *testing.T, ctx context.Context, c *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return mfs
}

// labelKeys returns the sorted label keys of mf's samples.
func labelKeys(mf *dto.MetricFamily) []string {
	keys := map[string]bool{}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			keys[l.GetName()] = true
		}
	}
	return slices.Sorted(maps.Keys(keys))
}

// seriesSet renders each relevant family as name{key,…}.
func seriesSet(mfs map[string]*dto.MetricFamily, relevant func(string, *dto.MetricFamily) bool) map[string]bool {
	out := map[string]bool{}
	for name, mf := range mfs {
		if relevant(name, mf) {
			out[name+"{"+strings.Join(labelKeys(mf), ",")+"}"] = true
		}
	}
	return out
}

// value returns the counter or gauge value of the sample of mf whose label
// key is val, summed over the other labels; -1 if there is none.
func value(mf *dto.MetricFamily, key, val string) float64 {
	v, found := 0.0, false
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == key && l.GetValue() == val {
				found = true
				v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	if !found {
		return -1
	}
	return v
}

// histogramCount is value for a histogram's sample count.
func histogramCount(mf *dto.MetricFamily, key, val string) int {
	n, found := 0, false
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == key && l.GetValue() == val {
				found = true
				n += int(m.GetHistogram().GetSampleCount())
			}
		}
	}
	if !found {
		return -1
	}
	return n
}
