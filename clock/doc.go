// Package clock is the one notion of time shared by the queues, informers
// and shells of this library.
//
// Decision code never reads a clock: it takes `now time.Time` as a
// parameter. Only shells (workqueue, informer, reconcilers, the in-memory
// cluster) hold a [Clock], and they receive it through a config field whose
// nil value means [Real].
//
// [Fake] is a manual clock for tests: time moves only when the test calls
// [Fake.Step] or [Fake.SetTime], and timers whose deadline has been reached
// fire at that moment. Tests built on it never sleep.
//
// # Usage
//
//	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
//	t := fc.NewTimer(5 * time.Second)
//	fc.Step(5 * time.Second) // t.C() now holds the firing time
package clock
