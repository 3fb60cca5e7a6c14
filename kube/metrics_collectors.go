package kube

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/internal/worker"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Queue returns the work queue hook (ControllerConfig.Metrics) of the
// queue named name, which feeds the seven workqueue_* series with
// name=name. kube-controller-manager names its queues "deployment" and
// "replicaset". Queues of one name add up (a sharded Operator runs one
// per range); a queue that is done calls its hook's release.
func (m *Metrics) Queue(name string) workqueue.Metrics {
	return queueMetrics{m: m, name: name, part: &queuePart{},
		depth: m.depth.WithLabelValues(name), adds: m.adds.WithLabelValues(name), retries: m.retries.WithLabelValues(name),
		wait: m.queueDuration.WithLabelValues(name), work: m.workDuration.WithLabelValues(name), skipped: m.skipped.WithLabelValues(name)}
}

// queuePart identifies one queue among those of a name.
type queuePart struct{ _ byte }

type queueMetrics struct {
	m             *Metrics
	name          string
	part          *queuePart
	depth         prometheus.Gauge
	adds, retries prometheus.Counter
	skipped       prometheus.Counter
	wait, work    prometheus.Observer
}

var (
	_ workqueue.Metrics           = queueMetrics{}
	_ workqueue.UnfinishedMetrics = queueMetrics{}
	_ worker.Skipper              = queueMetrics{}
)

// setDepth records this queue's depth and sets the gauge to the sum of
// the name's queues.
func (q queueMetrics) setDepth(depth int) {
	m := q.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.depths == nil {
		m.depths = make(map[string]map[*queuePart]int)
	}
	if m.depths[q.name] == nil {
		m.depths[q.name] = make(map[*queuePart]int)
	}
	m.depths[q.name][q.part] = depth
	sum := 0
	for _, d := range m.depths[q.name] {
		sum += d
	}
	q.depth.Set(float64(sum))
}

// release forgets this queue: it is done.
func (q queueMetrics) release() {
	q.setDepth(0)
	m := q.m
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.depths[q.name], q.part)
	delete(m.queues[q.name], q.part)
}

func (q queueMetrics) Added(depth int) {
	q.adds.Inc()
	q.setDepth(depth)
}

func (q queueMetrics) Started(depth int, wait time.Duration) {
	q.setDepth(depth)
	q.wait.Observe(wait.Seconds())
}

func (q queueMetrics) Finished(depth int, work time.Duration) {
	q.setDepth(depth)
	q.work.Observe(work.Seconds())
}

func (q queueMetrics) Retried() { q.retries.Inc() }

// SyncSkipped counts ctrlkit_syncs_skipped_total{controller=name}.
func (q queueMetrics) SyncSkipped() { q.skipped.Inc() }

// Unfinished keeps the queue's reader for the two gauges read at scrape
// time (the sum and the longest of the name's queues).
func (q queueMetrics) Unfinished(read func() (total, longest time.Duration)) {
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	if q.m.queues == nil {
		q.m.queues = make(map[string]map[*queuePart]func() (total, longest time.Duration))
	}
	if q.m.queues[q.name] == nil {
		q.m.queues[q.name] = make(map[*queuePart]func() (total, longest time.Duration))
	}
	q.m.queues[q.name][q.part] = read
}

// scrapeCollector reports the series read at scrape time: the work in
// progress of each queue, the informers' object counts and the
// WriteCounter's counts.
type scrapeCollector struct {
	m                                                 *Metrics
	unfinished, longest, objects, requests, conflicts *prometheus.Desc
	shardDescs
}

func newScrapeCollector(m *Metrics) scrapeCollector {
	return scrapeCollector{m: m,
		unfinished: prometheus.NewDesc("workqueue_unfinished_work_seconds",
			"Seconds spent so far by the keys being processed, not yet in work_duration; a steady rise means stuck workers.", []string{"name"}, nil),
		longest: prometheus.NewDesc("workqueue_longest_running_processor_seconds",
			"Seconds the longest running sync in progress has taken so far.", []string{"name"}, nil),
		objects: prometheus.NewDesc("ctrlkit_informer_objects",
			"Objects in each informer cache.", []string{"resource"}, nil),
		requests: prometheus.NewDesc("ctrlkit_api_requests_total",
			"API requests by verb (create, update, patch, delete, get, list, watch, …) and resource (with /subresource).", []string{"verb", "resource"}, nil),
		conflicts: prometheus.NewDesc("ctrlkit_api_conflicts_total",
			"API requests answered 409 Conflict, by verb and resource.", []string{"verb", "resource"}, nil),
		shardDescs: newShardDescs(),
	}
}

func (c scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.unfinished, c.longest, c.objects, c.requests, c.conflicts} {
		ch <- d
	}
	c.describeShard(ch)
}

func (c scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	m.mu.Lock()
	queues := make(map[string][]func() (total, longest time.Duration), len(m.queues))
	for k, parts := range m.queues {
		for _, v := range parts {
			queues[k] = append(queues[k], v)
		}
	}
	type counter struct {
		owner string
		count func() int
	}
	objects := make(map[string][]counter, len(m.objects))
	for k, byOwner := range m.objects {
		for owner, v := range byOwner {
			objects[k] = append(objects[k], counter{owner, v})
		}
	}
	m.mu.Unlock()
	for name, reads := range queues {
		var total, longest time.Duration
		for _, read := range reads {
			t, l := read()
			total, longest = total+t, max(longest, l)
		}
		ch <- prometheus.MustNewConstMetric(c.unfinished, prometheus.GaugeValue, total.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(c.longest, prometheus.GaugeValue, longest.Seconds(), name)
	}
	for resource, counts := range objects {
		sum := 0
		for _, cn := range counts {
			n := cn.count()
			sum += n
			if cn.owner != "" {
				ch <- prometheus.MustNewConstMetric(c.rangeObjects, prometheus.GaugeValue, float64(n), cn.owner, resource)
			}
		}
		if len(counts) > 0 {
			ch <- prometheus.MustNewConstMetric(c.objects, prometheus.GaugeValue, float64(sum), resource)
		}
	}
	c.collectShard(ch)
	for r, n := range m.Requests.Counts() {
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(n), r.Verb, r.Resource)
	}
	for r, n := range m.Requests.Conflicts() {
		ch <- prometheus.MustNewConstMetric(c.conflicts, prometheus.CounterValue, float64(n), r.Verb, r.Resource)
	}
}

// WrapTransport returns a RoundTripper that counts every request in
// Requests and in rest_client_requests_total{code,host,method}, and times
// it in rest_client_request_duration_seconds{host,verb}, then passes it to
// next. Set it as a rest.Config's WrapTransport; the [Operator] does.
//
// client-go measures the same two series from inside its REST client,
// through a process-wide hook (k8s.io/client-go/tools/metrics.Register);
// measuring in the transport keeps them per Metrics instead. The
// latencies are of each attempt on the wire, without the client's rate
// limiter wait.
func (m *Metrics) WrapTransport(next http.RoundTripper) http.RoundTripper {
	return m.Requests.Wrap(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := next.RoundTrip(req)
		m.restLatency.WithLabelValues(req.URL.Host, req.Method).Observe(time.Since(start).Seconds())
		code := "<error>"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.restRequests.WithLabelValues(code, req.URL.Host, req.Method).Inc()
		return resp, err
	}))
}
