// Package workqueue is the work queue between event sources (informers)
// and the workers of a controller. It is a typed re-implementation of
// client-go's util/workqueue, with the same model (Get, Done, Forget,
// AddRateLimited) and these guarantees:
//
//   - Fair: items are handed out in the order in which they first became
//     pending. Adding a pending item again does not move it.
//   - Stingy: an item added many times before a worker gets it is
//     processed once. Delayed adds ([Queue.AddAfter], [Queue.AddRateLimited])
//     of an item merge into one pending request, and the earliest due time
//     wins. As in client-go, that request is independent of plain adds: a
//     plain Add, or processing the item, does not cancel it, and the item is
//     added again when it is due. A controller's retry therefore comes no
//     later than its first backoff scheduled, however often the item is
//     processed and fails meanwhile. [Queue.AddBatched] (no client-go
//     counterpart) is the stingy kind: a plain Add, or a Get, before it is
//     due serves it, and the item runs once.
//   - One worker per item: an item handed out by [Queue.Get] is not handed
//     out again until [Queue.Done]. If it is added while being processed,
//     it is queued again, once, at Done; the add is never lost.
//   - Many producers and consumers: every method is safe for concurrent
//     use.
//   - Injected time: delays, rate limits and metrics use the
//     [clock.Clock] from [Config]; tests drive them with a [clock.Fake].
//     On a Fake, the items of a served queue (see [Queue.Serve]) are
//     tracked work from Add to Done ([clock.Source]), so a simulation's
//     virtual time waits for them, and on a deterministic Fake the workers
//     get them in turn, in order.
//   - Bounded bookkeeping: the failure counts of items that were processed
//     successfully are forgotten even if the worker never calls
//     [Queue.Forget] (see [Queue.AddRateLimited]).
//   - Orderly shutdown: after [Queue.ShutDown], adds are dropped and items
//     still waiting out a delay are discarded; Get hands out what is queued,
//     then reports shutdown. [Queue.ShutDownWithDrain] waits until every
//     queued and in-flight item is Done, or its context ends (client-go
//     waits only for the in-flight ones).
//   - No global state: no default metrics provider, no package variables.
//     [Metrics] are a per-queue hook.
//
// The queue does no I/O and starts no goroutine: one timer of its clock
// ([clock.Clock.AfterFunc]) moves delayed items to the queue when they are
// due.
//
// # Usage
//
//	q := workqueue.New(workqueue.Config[types.NamespacedName]{Name: "replicaset"})
//	defer q.ShutDown()
//	// In each worker goroutine:
//	for {
//		key, shutdown := q.Get()
//		if shutdown {
//			return
//		}
//		if err := reconcile(ctx, key); err != nil {
//			q.AddRateLimited(key) // retry with backoff
//		} else {
//			q.Forget(key) // reset the backoff
//		}
//		q.Done(key)
//	}
package workqueue
