package memcluster

import (
	"context"
	"time"
)

// Request is what [Config.OnRequest] is told: a request the cluster
// admitted, with the faults injected into it, or a watch the cluster ended
// to inject a dropped watch.
type Request struct {
	// Verb, Resource, Namespace and Name describe the request (Name is
	// empty for lists, watches and creates with generateName). Resource
	// is the plural name, e.g. "pods".
	Verb      string
	Resource  string
	Namespace string
	Name      string
	// Latency is the latency injected into the request (every matching
	// rule's, added up).
	Latency time.Duration
	// Fault is a copy of the rule whose error the request gets, or nil.
	// With Fault.AfterWrite the request takes effect before failing.
	Fault *FaultRule
	// Dropped reports a watch ended instead of delivering an event
	// ([Faults.WatchDropRate]); Watch is its number (watches are numbered
	// in the order they are opened).
	Dropped bool
	Watch   uint64
}

// requested tells Config.OnRequest, if set, about r.
func (c *Cluster) requested(ctx context.Context, r Request) {
	if h := c.cfg.OnRequest; h != nil {
		h(ctx, r)
	}
}
