// Package gate is the plumbing by which memcluster lets a scheduler order
// its work: memcluster.Config.Gate, whose type is [Gate], is set by this
// repository's bench (controllerruntime/clustertest) only, so the types
// live here rather than in memcluster's API.
package gate

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/watch"
)

// Verb names a request type: kube-apiserver's verb, the string memcluster's
// fault rules (FaultRule.Verb) and request log (Request.Verb) carry.
type Verb string

// The verbs of memcluster's requests: kube-apiserver's, and update/status
// for a write of the status subresource.
const (
	VerbGet          Verb = "get"
	VerbList         Verb = "list"
	VerbWatch        Verb = "watch"
	VerbCreate       Verb = "create"
	VerbUpdate       Verb = "update"
	VerbUpdateStatus Verb = "update/status"
	VerbPatch        Verb = "patch"
	VerbDelete       Verb = "delete"
)

// KnownVerb reports whether v is one of the verbs above.
func KnownVerb(v Verb) bool {
	switch v {
	case VerbGet, VerbList, VerbWatch, VerbCreate, VerbUpdate, VerbUpdateStatus, VerbPatch, VerbDelete:
		return true
	}
	return false
}

// A Gate orders a memcluster's work. When memcluster.Config.Gate is set,
// every request, every watch event delivered to a watcher and every
// kubelet sync first calls Enter, and takes effect only once Enter has
// returned (a request with injected latency calls it again once the
// latency has passed). A scheduler that lets one [Step] through at a
// time, in an order that does not depend on how goroutines happened to
// run, makes a simulation replay exactly; package
// controllerruntime/clustertest has one, for code that runs in a
// testing/synctest bubble with the cluster on the real clock (inside a
// bubble, the real clock is the bubble's virtual one).
//
// Enter is called with no lock of the cluster held. It returns ctx's
// error if ctx ends first; the step then does not happen.
type Gate interface {
	Enter(ctx context.Context, s Step) error
}

// StepKind says what a [Step] is.
type StepKind uint8

// The kinds of steps.
const (
	StepRequest  StepKind = iota // a client request (any verb)
	StepDelivery                 // a watch event on its way to a watcher
	StepKubelet                  // a pass of the simulated kubelet
)

// Step is a piece of the cluster's work waiting at a [Gate].
type Step struct {
	Kind StepKind
	// Verb, Resource, Namespace and Name describe a request (Name is
	// empty for lists, watches and creates with generateName). Resource
	// is the plural name, e.g. "pods".
	Verb      Verb
	Resource  string
	Namespace string
	Name      string
	// Watch is the number of the watch a delivery is for (watches are
	// numbered in the order they are opened), ResourceVersion its event's
	// version and Event its type.
	Watch           uint64
	ResourceVersion string
	Event           watch.EventType
}

// String describes s in one line.
func (s Step) String() string {
	switch s.Kind {
	case StepDelivery:
		return fmt.Sprintf("deliver %s %s@%s to watch %d", s.Event, s.Resource, s.ResourceVersion, s.Watch)
	case StepKubelet:
		return "kubelet sync"
	}
	key := s.Name
	if s.Namespace != "" {
		key = s.Namespace + "/" + s.Name
	}
	return fmt.Sprintf("%s %s %s", s.Verb, s.Resource, key)
}

// ErrWatchExpired is what a [Gate] returns from Enter, for a watch
// delivery, to expire that watch: instead of the event, the watcher gets
// a 410 Expired ERROR event ("too old resource version") and the watch
// ends, as kube-apiserver ends a watch whose resourceVersion was
// compacted away. A reflector then lists again and watches from the
// list: the events it had not received yet are not replayed one by one,
// only the state the list shows (a deleted object is gone, the updates
// between collapse into one).
var ErrWatchExpired = errors.New("gate: watch expired at the gate")
