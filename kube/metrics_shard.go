package kube

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/shard"
)

// shardMetrics is what a sharded Operator reports at scrape time: its
// member's ranges and its informers' watch counts.
type shardMetrics struct {
	owned  func() map[int]shard.Range
	stats  *watchStats
	events *prometheus.CounterVec
}

// shardDescs are the series of a sharded Operator read at scrape time.
type shardDescs struct {
	owned, rangeObjects, received, dropped, serverSide *prometheus.Desc
}

func newShardDescs() shardDescs {
	return shardDescs{
		owned: prometheus.NewDesc("ctrlkit_shard_owned_ranges",
			"Ranges of the hash space of namespaces this member runs (sharded only).", nil, nil),
		rangeObjects: prometheus.NewDesc("ctrlkit_shard_objects",
			"Objects in the informer caches of each range this member runs, by resource (sharded only).", []string{"range", "resource"}, nil),
		received: prometheus.NewDesc("ctrlkit_watch_events_received_total",
			"Watch events the sharded informers received from the API server, by resource (before the client-side filter).", []string{"resource"}, nil),
		dropped: prometheus.NewDesc("ctrlkit_watch_events_dropped_total",
			"Watch events the sharded informers dropped because their namespace is outside the member's ranges (the server did not filter them).", []string{"resource"}, nil),
		serverSide: prometheus.NewDesc("ctrlkit_shard_server_filtering",
			"1 when the API server filtered the last list of the resource by shardSelector (metadata.shardInfo set), 0 when it did not (the ShardedListAndWatch gate is off, or the member filters on the client).", []string{"resource"}, nil),
	}
}

func (d shardDescs) describeShard(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{d.owned, d.rangeObjects, d.received, d.dropped, d.serverSide} {
		ch <- x
	}
}

func (c scrapeCollector) collectShard(ch chan<- prometheus.Metric) {
	m := c.m
	m.mu.Lock()
	owned, stats := m.shard.owned, m.shard.stats
	m.mu.Unlock()
	if owned != nil {
		ch <- prometheus.MustNewConstMetric(c.owned, prometheus.GaugeValue, float64(len(owned())))
	}
	if stats == nil {
		return
	}
	for i, r := range shardResources() {
		ch <- prometheus.MustNewConstMetric(c.received, prometheus.CounterValue, float64(stats.received[i].Load()), r)
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(stats.dropped[i].Load()), r)
		switch stats.serverSide[i].Load() {
		case 1:
			ch <- prometheus.MustNewConstMetric(c.serverSide, prometheus.GaugeValue, 1, r)
		case -1:
			ch <- prometheus.MustNewConstMetric(c.serverSide, prometheus.GaugeValue, 0, r)
		}
	}
}

// setShard makes the Metrics report a sharded Operator's member.
func (m *Metrics) setShard(owned func() map[int]shard.Range, stats *watchStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.shard.owned, m.shard.stats = owned, stats
}

// shardEvent counts one event of the member
// (ctrlkit_shard_range_events_total{event}).
func (m *Metrics) shardEvent(e shard.Event) {
	m.shard.events.WithLabelValues(string(e.Type)).Inc()
}

// rangeOwner is the owner label of range i's objects.
func rangeOwner(i int) string { return strconv.Itoa(i) }
