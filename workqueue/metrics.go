package workqueue

import "time"

// Metrics receives the measurements of one queue; set it in
// [Config.Metrics]. Every change of the queue's length comes with a call
// carrying the new length as depth, so a depth gauge set from these calls
// is always right.
//
// The queue calls these methods with one of its locks held: they must be
// quick, must not call the queue, and must be safe for concurrent use
// (Retried for an AddAfter is called under the lock of the delay inbox,
// concurrently with the others). Durations are measured with the queue's
// clock.
//
// Two gauges client-go samples from a goroutine every 500ms, the unfinished
// work and the longest running processor, are read on demand with
// [Queue.Unfinished] instead: a Metrics that also implements
// [UnfinishedMetrics] is handed that method when the queue is created, so
// that a collector can read both at scrape time even when the queue is
// built inside a controller.
type Metrics interface {
	// Added is called when an Add, or the end of a delay, makes an item
	// pending that was not (adds that coalesce are not reported). depth
	// is Len after the add; an item added while it is being processed
	// joins the length only at its Done.
	Added(depth int)
	// Started is called when Get hands out an item that had been pending
	// for wait.
	Started(depth int, wait time.Duration)
	// Finished is called when Done ends the processing of an item that
	// took work.
	Finished(depth int, work time.Duration)
	// Retried is called for every AddRateLimited, and for every AddAfter
	// with a positive delay, during the call (after ShutDown, neither
	// counts): the calls client-go counts as retries.
	Retried()
}

// UnfinishedMetrics is the optional part of a [Metrics] hook that reads
// the work in progress. [New] calls Unfinished once, before it returns,
// with the new queue's [Queue.Unfinished]; the hook may call read at any
// time afterwards, from any goroutine, but not from inside its other
// methods (the queue holds its lock while it calls them).
//
// With the other calls it carries all seven series of client-go's work
// queue metrics: depth, adds, queue duration, work duration, retries,
// unfinished work and longest running processor.
type UnfinishedMetrics interface {
	Unfinished(read func() (total, longest time.Duration))
}

// Unfinished returns the total time spent so far by the items being
// processed, and the longest time spent by one of them. A growing value
// reveals a stuck worker.
//
// Processing times are measured only for queues with [Config.Metrics]
// set, so both values are zero without it. The cost is linear in the
// number of items the queue holds.
func (q *Queue[T]) Unfinished() (total, longest time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.metrics == nil || q.processing == 0 {
		return 0, 0
	}
	now := q.now()
	for _, e := range q.items {
		if e.state&processing == 0 {
			continue
		}
		d := time.Duration(now - e.started)
		total += d
		longest = max(longest, d)
	}
	return total, longest
}
