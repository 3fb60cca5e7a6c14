// Package fakewatch is a watch.Interface that tests feed by hand, like
// k8s.io/apimachinery's watch.FakeWatcher, but whose events take part in
// the exact virtual time of a clock.Fake: a test that feeds an event and
// then calls Fake.Settle knows, when Settle returns, that the informer
// reading the watch has applied it and that everything it caused at the
// current instant (handler calls, queued keys, syncs) has happened. No
// test then needs to poll or to wait a wall-clock time for a change to
// arrive, or to make sure that none does.
//
// A [Watch] implements internal/watchproto.AckWatcher. Each event is tracked work
// (clock.Source) from the moment it is fed until its consumer
// acknowledges it, or, for a consumer that never calls AckEvents, until
// it is received. The end of the watch ([Watch.Close], or an error event)
// is tracked too, until the consumer calls Stop, which every consumer must
// do. Feeding never blocks: events wait in an unbounded buffer.
package fakewatch
