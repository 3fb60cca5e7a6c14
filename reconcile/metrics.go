package reconcile

// SkipMetrics is an optional part of a controller's measurements hook
// (ControllerConfig.Metrics of packages deployment and replicaset): a hook
// that implements it is told of every key a worker took from the queue
// and did not sync because the cache still held a version that the
// controller's own last write had replaced. The write's event enqueues the
// key again, so the skip saves a sync on stale data, not work. It must be
// quick and safe for concurrent use.
type SkipMetrics interface {
	SyncSkipped()
}
