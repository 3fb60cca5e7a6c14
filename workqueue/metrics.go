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
// [Queue.Unfinished] instead (for example from a scrape-time callback).
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
