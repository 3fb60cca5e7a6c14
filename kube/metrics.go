package kube

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Metrics holds the operator's Prometheus collectors, registered on one
// registry. Create it with [NewMetrics]; it is safe for concurrent use.
//
// The series kube-controller-manager and client-go expose, with their
// names, labels and buckets, so that their dashboards and alerts work:
//
//	workqueue_depth{name}                              keys waiting (name: deployment, replicaset)
//	workqueue_adds_total{name}                         keys that became pending
//	workqueue_queue_duration_seconds{name}             histogram: time a key waited for a worker
//	workqueue_work_duration_seconds{name}              histogram: time a worker held a key
//	workqueue_unfinished_work_seconds{name}            time spent so far by the keys being processed
//	workqueue_longest_running_processor_seconds{name}  the longest of those
//	workqueue_retries_total{name}                      rate-limited and delayed adds
//	rest_client_requests_total{code,host,method}       API requests by HTTP status ("<error>" without one)
//	rest_client_request_duration_seconds{host,verb}    histogram: API request latency (verb is the HTTP method)
//	leader_election_master_status{name}                1 while this process holds the lease called name
//
// The ctrlkit-only series, which have no standard equivalent:
//
//	ctrlkit_syncs_total{controller,result}      syncs that succeeded or failed (counted at the rate limiter)
//	ctrlkit_syncs_skipped_total{controller}     syncs skipped while the cache lagged behind the controller's own writes
//	ctrlkit_api_requests_total{verb,resource}   API requests by verb and resource (rest_client_* has neither)
//	ctrlkit_api_conflicts_total{verb,resource}  requests answered 409 Conflict
//	ctrlkit_informer_objects{resource}          objects in each informer cache
//
// With [Operator.Sharding], per member:
//
//	ctrlkit_shard_owned_ranges                    ranges of the hash space of namespaces it runs
//	ctrlkit_shard_objects{range,resource}         objects in the informer caches of each range
//	ctrlkit_shard_range_events_total{event}       ranges Started, Stopped, Released; Problems (Leases edited by hand, …)
//	ctrlkit_shard_server_filtering{resource}      1 when the API server filtered the last list by shardSelector, else 0
//	ctrlkit_watch_events_received_total{resource} watch events received (before the client-side filter)
//	ctrlkit_watch_events_dropped_total{resource}  of those, outside the member's ranges (not filtered by the server)
type Metrics struct {
	// Requests counts the API requests by verb and resource; the
	// operator installs it in its clients' transport.
	Requests WriteCounter

	gatherer prometheus.Gatherer

	depth, leader                               *prometheus.GaugeVec
	adds, retries, syncs, skipped, restRequests *prometheus.CounterVec
	queueDuration, workDuration, restLatency    *prometheus.HistogramVec

	mu sync.Mutex
	// queues and depths hold, per queue name, each queue's reader and
	// depth: the ranges of a sharded Operator run one queue each under
	// one name, and the series add them up.
	queues  map[string]map[*queuePart]func() (total, longest time.Duration)
	depths  map[string]map[*queuePart]int
	objects map[string]map[string]func() int // resource → owner ("" or a range) → count
	shard   shardMetrics
}

// NewMetrics creates the collectors and registers them on reg. A nil reg
// means a fresh registry of the Metrics' own, never the global one. To
// serve reg with [Metrics.ServeHTTP] it must also be a
// prometheus.Gatherer (a *prometheus.Registry, or controller-runtime's
// metrics.Registry, is both).
//
// Registering two Metrics on one registry fails: the series would clash.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		r := prometheus.NewRegistry()
		reg = r
	}
	m := &Metrics{}
	m.gatherer, _ = reg.(prometheus.Gatherer)
	name := []string{"name"}
	// The buckets of the standard histograms, as client-go and
	// kube-controller-manager define them: 10ns to 10s by tenfold steps
	// for the work queues, 5ms to a minute for the REST client.
	workqueueBuckets := prometheus.ExponentialBuckets(10e-9, 10, 10)
	restClientBuckets := []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}
	m.depth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth",
		Help: "Keys waiting in the work queue."}, name)
	m.adds = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total",
		Help: "Keys that became pending in the work queue (adds of a pending key are not counted)."}, name)
	m.queueDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help: "Seconds a key waited in the work queue before a worker took it.", Buckets: workqueueBuckets}, name)
	m.workDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds",
		Help: "Seconds a worker held a key (one sync).", Buckets: workqueueBuckets}, name)
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total",
		Help: "Rate-limited and delayed adds to the work queue."}, name)
	m.restRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "rest_client", Name: "requests_total",
		Help: "API requests by HTTP status code, method and host."}, []string{"code", "host", "method"})
	m.restLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "rest_client", Name: "request_duration_seconds",
		Help: "API request latency in seconds by HTTP method and host.", Buckets: restClientBuckets}, []string{"host", "verb"})
	m.leader = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "leader_election", Name: "master_status",
		Help: "1 while this process holds the lease called name, 0 otherwise."}, name)
	m.syncs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ctrlkit_syncs_total",
		Help: "Syncs by controller and result (success or error), counted at the work queue's rate limiter."}, []string{"controller", "result"})
	m.skipped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ctrlkit_syncs_skipped_total",
		Help: "Keys taken from the work queue and not synced because the cache still held a version the controller's own last write replaced."}, []string{"controller"})
	m.shard.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ctrlkit_shard_range_events_total",
		Help: "What happened to the ranges of a sharded member: Started, Stopped (handed over, fenced, or the record edited), Released (in the assignment), Problem (a Lease edited by hand, …)."}, []string{"event"})
	for _, c := range []prometheus.Collector{m.depth, m.adds, m.queueDuration, m.workDuration, m.retries,
		m.restRequests, m.restLatency, m.leader, m.syncs, m.skipped, m.shard.events, newScrapeCollector(m)} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// SetLeader records whether this process holds the lease called name
// (leader_election_master_status{name}).
func (m *Metrics) SetLeader(name string, leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	m.leader.WithLabelValues(name).Set(v)
}

// Gatherer returns the registry the Metrics were registered on, or nil if
// it cannot be gathered.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.gatherer }

// ServeHTTP serves the registry in the Prometheus exposition formats
// (promhttp).
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.gatherer == nil {
		http.Error(w, errNoGatherer.Error(), http.StatusInternalServerError)
		return
	}
	promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// setObjects makes ctrlkit_informer_objects{resource} report count() at
// scrape time, replacing what an earlier run set.
func (m *Metrics) setObjects(resource string, count func() int) { m.addObjects("", resource, count) }

// addObjects adds count() of owner (a range of a sharded Operator; ""
// for the whole) to ctrlkit_informer_objects{resource}, replacing what
// the same owner set before.
func (m *Metrics) addObjects(owner, resource string, count func() int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objects == nil {
		m.objects = make(map[string]map[string]func() int)
	}
	if m.objects[resource] == nil {
		m.objects[resource] = make(map[string]func() int)
	}
	m.objects[resource][owner] = count
}

// dropObjects removes what owner added.
func (m *Metrics) dropObjects(owner string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, byOwner := range m.objects {
		delete(byOwner, owner)
	}
}

// RateLimiter wraps a work queue's rate limiter to count the syncs of the
// controller named name (ctrlkit_syncs_total): the queue calls Forget
// after a successful sync and When for every rate-limited retry of a
// failed one.
func (m *Metrics) RateLimiter(name string, next workqueue.RateLimiter[types.NamespacedName]) workqueue.RateLimiter[types.NamespacedName] {
	return countingLimiter{next: next, ok: m.syncs.WithLabelValues(name, "success"), failed: m.syncs.WithLabelValues(name, "error")}
}

type countingLimiter struct {
	next       workqueue.RateLimiter[types.NamespacedName]
	ok, failed prometheus.Counter
}

func (l countingLimiter) When(k types.NamespacedName) time.Duration {
	l.failed.Inc()
	return l.next.When(k)
}

func (l countingLimiter) Forget(k types.NamespacedName) {
	l.ok.Inc()
	l.next.Forget(k)
}

func (l countingLimiter) NumRequeues(k types.NamespacedName) int { return l.next.NumRequeues(k) }

// errNoGatherer is ServeHTTP's answer for a registry it cannot read.
var errNoGatherer = errors.New("kube: the metrics registry is not a prometheus.Gatherer")
