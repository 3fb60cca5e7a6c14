// Package clock is the one notion of time shared by the queues, informers
// and shells of this library, and the scheduler of its simulations.
//
// Decision code never reads a clock: it takes `now time.Time` as a
// parameter. Only shells (workqueue, informer, reconcilers, the in-memory
// cluster) hold a [Clock], and they receive it through a config field whose
// nil value means [Real].
//
// # Fake time
//
// [Fake] is a clock that moves only when told to. A unit test moves it by
// hand with [Fake.Step] or [Fake.SetTime]: timers that are then due fire,
// and callbacks of [Fake.AfterFunc] run before the call returns.
//
// # Exact virtual time
//
// A simulation (an in-memory cluster with controllers, informers and a
// kubelet, all on one Fake) moves time with [Fake.RunUntil]: it lets the
// work of the current instant finish, then jumps to the next timer. The
// hard part is knowing that the work of an instant has finished: between
// a write and the sync it causes there are hand-offs between goroutines
// (watch → informer → handler → work queue → worker). Guessing from
// wall-clock time that the system "looks idle" fails on a busy machine,
// and then the same simulation gives different timelines.
//
// So the components account for their work instead ([Source]): every
// hand-off is started by the producer before it returns and finished by
// the consumer only after it has started whatever it hands on, so the
// count of unfinished work never drops to zero in the middle of a chain of
// causes. When it is zero, only a timer can create new work, and time may
// move. This is a fact the components report, not a guess: a run takes
// the same virtual time however busy the machine is, and a system with
// nothing left to do is reported at once ([ErrStalled]). The work queues
// and informers of this library and memcluster's watches and kubelet take
// part on their own when they run on a Fake; your own goroutines take part
// through [Source] (Start before handing work over, Done when it is
// finished) and [Sleep].
//
// Of the ways to get exact time, this one was chosen because it works in
// every program, not only in tests (examples and command-line tools run
// simulations too), holds for goroutines of any kind, including blocked on
// mutexes, and is cheap: a counter per hand-off. Go's testing/synctest
// gives exactness for free to code that only uses the standard library's
// time, but only inside a test; a single-threaded driver gives
// determinism, but not to concurrent controllers.
//
// # Determinism
//
// A Fake from [NewFake] runs the work of an instant concurrently: the
// virtual durations and the final state of a run do not depend on the
// machine, but the interleaving of the work of one instant can, and with
// it the intermediate states and the events. A Fake from
// [NewDeterministic] also gives every unit of work its turn, one at a
// time, in the order it was handed over, so that a simulation does the
// same thing run after run: same seed, same trace. Work runs only in
// [Fake.Settle] (or RunUntil, which calls it) on such a clock.
//
// A Fake from [NewInterleaved] also runs one unit at a time, but gives the
// turn, each time more than one unit could go, to one drawn from a seed:
// one of the orders in which the work of an instant could have run
// concurrently (the units of one [Source] keep their order; timer
// callbacks due at one instant, and the calls of one [Fork], go in any
// order; a goroutine that calls [Yield] lets the others go first). It
// records the turns it took ([Fake.Schedule]), and [NewReplay] takes them
// again: a failure found in one interleaving replays exactly.
//
// # Usage
//
//	fc := clock.NewDeterministic(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
//	// ... give fc to a memcluster.Cluster, the work queues and informers,
//	// start them, then:
//	err := fc.RunUntil(ctx, done, time.Hour) // an hour-long rollout in milliseconds
//
// Your own goroutine that receives work from another one:
//
//	src := clock.NewSource(fc, "my-worker") // nil, and free, on other clocks
//	w, now := src.Start(func() { signal(job) })
//	if now {
//		signal(job)
//	}
//	// ... in the worker, once the job and everything it handed on is started:
//	w.Done()
package clock
