package reconcile

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Enqueue is what an informer event asks of a controller's work queue: to
// sync Key. The event-handler rules of packages deployment and replicaset
// (their EventRules) return these; a framework adapter turns each into a
// queue call.
//
// Both sets of rules follow the same conventions. They read caches and
// change nothing. Deletes take the object's last known state, which for a
// tombstone (client-go's cache.DeletedFinalStateUnknown) is the object it
// carries. No rule panics: an event with a nil object (for an update, a
// nil old or current object) is one the rules cannot interpret, and asks
// for nothing (upstream's handlers log and ignore objects they cannot
// interpret); a nil cache reads as an empty one, with an error logged to
// the context's logger (logr.FromContextOrDiscard).
type Enqueue struct {
	// Key names the object to sync.
	Key types.NamespacedName
	// After, if positive, asks for the sync after that delay (AddAfter);
	// zero asks for it at once (Add).
	After time.Duration
	// Batch marks an event that may wait for the controller's batch
	// period (ControllerConfig.BatchPeriod), so that a burst of such events
	// costs one sync. Without a batch period it is an ordinary Add.
	Batch bool
}

// String returns e.g. "sync ns/web", "sync ns/web after 10s" or
// "sync ns/web (batch)".
func (e Enqueue) String() string {
	s := "sync " + e.Key.String()
	if e.After > 0 {
		s += fmt.Sprintf(" after %v", e.After)
	}
	if e.Batch {
		s += " (batch)"
	}
	return s
}
