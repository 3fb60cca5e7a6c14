package kube

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctrlkit/ctrlkit/workqueue"
	"k8s.io/apimachinery/pkg/types"
)

// Metrics collects the operator's measurements and serves them in the
// Prometheus text exposition format (written by hand: no Prometheus client
// library). Its zero value is ready to use; it is safe for concurrent use.
//
// The series:
//
//	ctrlkit_syncs_total{controller,result}           syncs that succeeded or failed (counted at the work queue)
//	ctrlkit_sync_duration_seconds{controller}        histogram of sync durations (time a worker held the key)
//	ctrlkit_workqueue_depth{name}                    keys waiting in the queue
//	ctrlkit_workqueue_adds_total{name}               keys that became pending (coalesced adds not counted)
//	ctrlkit_workqueue_queue_duration_seconds{name}   histogram of the time a key waited before a worker took it
//	ctrlkit_workqueue_retries_total{name}            rate-limited requeues
//	ctrlkit_api_requests_total{verb,resource}        requests sent to the API server
//	ctrlkit_api_conflicts_total{verb,resource}       requests answered 409 Conflict
//	ctrlkit_informer_objects{resource}               objects in each informer cache
//	ctrlkit_leader                                   1 while this process leads
type Metrics struct {
	// Requests counts the API requests; the operator installs it in its
	// client's transport.
	Requests WriteCounter

	leader atomic.Bool

	mu        sync.Mutex
	syncs     map[[2]string]int
	durations map[string]*histogram
	retries   map[string]int
	depth     map[string]int
	adds      map[string]int
	waits     map[string]*histogram
	gauges    []gauge
}

type gauge struct {
	name, labels string
	value        func() float64
}

// durationBuckets are the upper bounds of the sync duration histogram, in
// seconds.
var durationBuckets = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

type histogram struct {
	counts [len(durationBuckets)]int
	sum    float64
	n      int
}

// SetLeader records whether this process holds the leader lease.
func (m *Metrics) SetLeader(leading bool) { m.leader.Store(leading) }

// ObserveSync records one sync of controller that took d.
func (m *Metrics) ObserveSync(controller string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	observe(&m.durations, controller, d)
}

// observe adds d to the histogram name of *hs.
func observe(hs *map[string]*histogram, name string, d time.Duration) {
	if *hs == nil {
		*hs = make(map[string]*histogram)
	}
	h := (*hs)[name]
	if h == nil {
		h = new(histogram)
		(*hs)[name] = h
	}
	s := d.Seconds()
	for i, b := range durationBuckets {
		if s <= b {
			h.counts[i]++
		}
	}
	h.sum += s
	h.n++
}

// Queue returns the work queue hook (ControllerConfig.Metrics) of the
// controller named name: it keeps the queue's depth, adds and waiting
// times, and records the time a worker held each key as a sync.
func (m *Metrics) Queue(name string) workqueue.Metrics { return queueMetrics{m: m, name: name} }

type queueMetrics struct {
	m    *Metrics
	name string
}

func (q queueMetrics) Added(depth int) {
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	if q.m.adds == nil {
		q.m.adds, q.m.depth = make(map[string]int), make(map[string]int)
	}
	q.m.adds[q.name]++
	q.m.depth[q.name] = depth
}

func (q queueMetrics) Started(depth int, wait time.Duration) {
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	if q.m.depth == nil {
		q.m.depth = make(map[string]int)
	}
	q.m.depth[q.name] = depth
	observe(&q.m.waits, q.name, wait)
}

func (q queueMetrics) Finished(depth int, work time.Duration) {
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	if q.m.depth == nil {
		q.m.depth = make(map[string]int)
	}
	q.m.depth[q.name] = depth
	observe(&q.m.durations, q.name, work)
}

// Retried is not counted here: the rate limiter counts the retries of
// failed syncs (RateLimiter), and the queue also reports delayed adds.
func (q queueMetrics) Retried() {}

func (m *Metrics) countSync(controller, result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.syncs == nil {
		m.syncs = make(map[[2]string]int)
	}
	m.syncs[[2]string{controller, result}]++
}

func (m *Metrics) countRetry(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.retries == nil {
		m.retries = make(map[string]int)
	}
	m.retries[name]++
}

// AddGauge registers a gauge read at scrape time: name{labels} value().
// labels is the rendered label list without braces, e.g. `resource="pods"`.
func (m *Metrics) AddGauge(name, labels string, value func() float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauges = append(m.gauges, gauge{name, labels, value})
}

// RateLimiter wraps a work queue's rate limiter to count the syncs of the
// controller named name: the queue calls Forget after a successful sync
// and When for every rate-limited retry of a failed one.
func (m *Metrics) RateLimiter(name string, next workqueue.RateLimiter[types.NamespacedName]) workqueue.RateLimiter[types.NamespacedName] {
	return countingLimiter{next: next, m: m, name: name}
}

type countingLimiter struct {
	next workqueue.RateLimiter[types.NamespacedName]
	m    *Metrics
	name string
}

func (l countingLimiter) When(k types.NamespacedName) time.Duration {
	l.m.countSync(l.name, "error")
	l.m.countRetry(l.name)
	return l.next.When(k)
}

func (l countingLimiter) Forget(k types.NamespacedName) {
	l.m.countSync(l.name, "success")
	l.next.Forget(k)
}

func (l countingLimiter) NumRequeues(k types.NamespacedName) int { return l.next.NumRequeues(k) }

// ServeHTTP writes the metrics in the text exposition format 0.0.4.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if err := m.Write(w); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Write writes the metrics in the text exposition format to w.
func (m *Metrics) Write(w io.Writer) error {
	b := bufio.NewWriter(w)
	m.mu.Lock()
	header(b, "ctrlkit_syncs_total", "counter", "Syncs by controller and result, counted at the work queue.")
	for _, k := range sortedKeys(m.syncs, func(a, b [2]string) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }) {
		fmt.Fprintf(b, "ctrlkit_syncs_total{controller=%s,result=%s} %d\n", q(k[0]), q(k[1]), m.syncs[k])
	}
	writeHistograms(b, "ctrlkit_sync_duration_seconds", "controller", "Duration of syncs.", m.durations)
	header(b, "ctrlkit_workqueue_depth", "gauge", "Keys waiting in the work queue.")
	for _, n := range sortedKeys(m.depth, func(a, b string) bool { return a < b }) {
		fmt.Fprintf(b, "ctrlkit_workqueue_depth{name=%s} %d\n", q(n), m.depth[n])
	}
	header(b, "ctrlkit_workqueue_adds_total", "counter", "Keys that became pending in the work queue.")
	for _, n := range sortedKeys(m.adds, func(a, b string) bool { return a < b }) {
		fmt.Fprintf(b, "ctrlkit_workqueue_adds_total{name=%s} %d\n", q(n), m.adds[n])
	}
	writeHistograms(b, "ctrlkit_workqueue_queue_duration_seconds", "name", "Time a key waited in the work queue before a worker took it.", m.waits)
	header(b, "ctrlkit_workqueue_retries_total", "counter", "Rate-limited requeues by queue.")
	for _, n := range sortedKeys(m.retries, func(a, b string) bool { return a < b }) {
		fmt.Fprintf(b, "ctrlkit_workqueue_retries_total{name=%s} %d\n", q(n), m.retries[n])
	}
	gauges := slices.Clone(m.gauges)
	m.mu.Unlock()

	header(b, "ctrlkit_api_requests_total", "counter", "Requests sent to the API server by verb and resource.")
	counts := m.Requests.Counts()
	for _, r := range SortedRequests(counts) {
		fmt.Fprintf(b, "ctrlkit_api_requests_total{verb=%s,resource=%s} %d\n", q(r.Verb), q(r.Resource), counts[r])
	}
	header(b, "ctrlkit_api_conflicts_total", "counter", "Requests answered 409 Conflict by verb and resource.")
	conflicts := m.Requests.Conflicts()
	for _, r := range SortedRequests(conflicts) {
		fmt.Fprintf(b, "ctrlkit_api_conflicts_total{verb=%s,resource=%s} %d\n", q(r.Verb), q(r.Resource), conflicts[r])
	}
	header(b, "ctrlkit_leader", "gauge", "1 while this process holds the leader lease (or runs without leader election).")
	v := 0
	if m.leader.Load() {
		v = 1
	}
	fmt.Fprintf(b, "ctrlkit_leader %d\n", v)
	last := ""
	for _, g := range gauges {
		if g.name != last {
			header(b, g.name, "gauge", "")
			last = g.name
		}
		fmt.Fprintf(b, "%s{%s} %g\n", g.name, g.labels, g.value())
	}
	return b.Flush()
}

// writeHistograms writes one histogram per key of hs, labelled label=key.
func writeHistograms(b io.Writer, name, label, help string, hs map[string]*histogram) {
	header(b, name, "histogram", help)
	for _, c := range sortedKeys(hs, func(a, b string) bool { return a < b }) {
		h := hs[c]
		for i, ub := range durationBuckets {
			fmt.Fprintf(b, "%s_bucket{%s=%s,le=%s} %d\n", name, label, q(c), q(strconv.FormatFloat(ub, 'g', -1, 64)), h.counts[i])
		}
		fmt.Fprintf(b, "%s_bucket{%s=%s,le=\"+Inf\"} %d\n", name, label, q(c), h.n)
		fmt.Fprintf(b, "%s_sum{%s=%s} %g\n", name, label, q(c), h.sum)
		fmt.Fprintf(b, "%s_count{%s=%s} %d\n", name, label, q(c), h.n)
	}
}

func header(w io.Writer, name, typ, help string) {
	if help != "" {
		fmt.Fprintf(w, "# HELP %s %s\n", name, help)
	}
	fmt.Fprintf(w, "# TYPE %s %s\n", name, typ)
}

// q quotes a label value as the exposition format requires.
func q(s string) string { return strconv.Quote(s) }

func sortedKeys[K comparable, V any](m map[K]V, less func(a, b K) bool) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	return keys
}
