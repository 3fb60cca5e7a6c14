package memcluster

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/internal/admit"
	"github.com/ctrlkit/ctrlkit/internal/gate"
)

// enter waits at the cluster's gate, if any.
func (c *Cluster) enter(ctx context.Context, s gate.Step) error {
	if c.cfg.Gate == nil || admit.IsLoopback(ctx) {
		return nil // the cluster's own requests are not ordered
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
