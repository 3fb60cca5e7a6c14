package memcluster

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/watch"
)

// A Gate orders the cluster's work. When [Config.Gate] is set, every
// request, every watch event delivered to a watcher and every kubelet sync
// first calls Enter, and takes effect only once Enter has returned (a
// request with injected latency calls it again once the latency has
// passed). A scheduler that lets one [Step] through at a time, in an
// order that does not depend on how goroutines happened to run, makes a
// simulation replay exactly; package controllerruntime/clustertest has
// one, for code that runs in a testing/synctest bubble with the cluster on
// the real clock (inside a bubble, the real clock is the bubble's virtual
// one).
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

// enter waits at the cluster's gate, if any.
func (c *Cluster) enter(ctx context.Context, s Step) error {
	if c.cfg.Gate == nil {
		return nil
	}
	return c.cfg.Gate.Enter(ctx, s)
}

// namespaceOf is the namespace a write of obj through cl goes to: cl's, or
// the object's own for a client of all namespaces. A nil obj has none.
func (cl Client[T]) namespaceOf(obj T) string {
	if cl.ns != "" || isNil(obj) {
		return cl.ns
	}
	return obj.GetNamespace()
}

// isNil reports whether obj is a nil pointer (or nil interface).
func isNil(obj any) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Write is a write the cluster stored, as [Config.OnWrite] is told: the
// watch event it makes (Added, Modified or Deleted), the kind's resource
// (e.g. "pods"), the stored object (for a deletion, its last state) and
// its resourceVersion.
type Write struct {
	Type            watch.EventType
	Resource        string
	Object          Object
	ResourceVersion uint64
}
