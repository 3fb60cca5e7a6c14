// Package watchproto is the protocol between ctrlkit's informers and the
// watches of its in-memory cluster (and of the test fakes): optional
// methods a watch may have, which the informer finds by type assertion.
// It is plumbing, not API: memcluster's watches implement it with their
// exported methods; nothing else needs to.
package watchproto

import "k8s.io/apimachinery/pkg/watch"

// AckWatcher is a watch that tracks each event it delivers as work on a
// fake clock (see clock.Source) until its consumer says it has handled
// the event, rather than only until the event is received. memcluster's
// watches implement it. The informer calls AckEvents once, before it reads
// the first event, then Ack after each event it has applied to its cache
// and handed to its handlers, and Stop when it is done with the watch,
// after it has taken work of its own for what follows; Stop finishes
// whatever is not acknowledged, including the end of the watch.
//
// A consumer that never calls AckEvents gets the default: the work of an
// event ends when the event is received.
type AckWatcher interface {
	watch.Interface
	// AckEvents makes every event's work last until its Ack.
	AckEvents()
	// Ack ends the work of the oldest unacknowledged event.
	Ack()
}

// SharingWatcher is a watch that can deliver its source's own objects
// instead of private copies, to a consumer that never modifies them. The
// informer, whose cache hands out shared read-only objects anyway, calls
// ShareObjects once before it reads the first event if it has no
// informer.Config.Transform (which may modify what it is given); a source that
// implements it (memcluster's watches do) then saves a deep copy of every
// event and the memory of a second copy of every object. Everything in
// the informer that reads these objects must treat them as read-only, as
// the cache's documentation already requires.
type SharingWatcher interface {
	watch.Interface
	// ShareObjects lets the watch deliver objects that are not the
	// consumer's own.
	ShareObjects()
}
