package kube

import (
	"context"
	"errors"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Source components of the events, as upstream kube-controller-manager
// names them.
const (
	DeploymentComponent = "deployment-controller"
	ReplicaSetComponent = "replicaset-controller"
)

// Events records core/v1 Event objects through client-go's event
// broadcaster, which aggregates repeated events and rate-limits them the
// way kube-controller-manager does. Create it with [StartEvents].
type Events struct {
	b    record.EventBroadcaster
	sink *gatedSink
}

// StartEvents starts an event broadcaster that writes events with cs and
// logs each at verbosity 3 to the logger in ctx. It runs goroutines until
// ctx is done or [Events.Shutdown] is called.
func StartEvents(ctx context.Context, cs kubernetes.Interface) *Events {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartStructuredLogging(3)
	sink := &gatedSink{sink: &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}}
	b.StartRecordingToSink(sink)
	return &Events{b: b, sink: sink}
}

// Recorder returns a recorder whose events name component as their source.
// The client-go scheme it uses to find objects' kinds is only read.
func (e *Events) Recorder(component string) record.EventRecorder {
	return e.b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}

// Deployment returns the recorder for the Deployment controller.
func (e *Events) Deployment() reconcile.EventRecorder { return e.Recorder(DeploymentComponent) }

// ReplicaSet returns the recorder for the ReplicaSet controller.
func (e *Events) ReplicaSet() reconcile.EventRecorder { return e.Recorder(ReplicaSetComponent) }

// Shutdown stops the broadcaster. An event write in flight completes
// before it returns; none starts after it (client-go's broadcaster may
// still be handing out queued events when its own Shutdown returns, and a
// leader that writes after releasing its lease overlaps its successor).
// Events not yet sent are dropped.
func (e *Events) Shutdown() {
	e.b.Shutdown()
	e.sink.close()
}

// errEventsShutdown refuses the events that come after Shutdown; client-go
// does not retry a request it could not construct.
var errEventsShutdown = &rest.RequestConstructionError{Err: errors.New("kube: events shut down")}

// gatedSink passes events to sink until close, which waits for the writes
// in flight.
type gatedSink struct {
	mu     sync.RWMutex // read-held by each write in flight
	closed bool
	sink   record.EventSink
}

func (g *gatedSink) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

func (g *gatedSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil, errEventsShutdown
	}
	return g.sink.Create(ev)
}

func (g *gatedSink) Update(ev *corev1.Event) (*corev1.Event, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil, errEventsShutdown
	}
	return g.sink.Update(ev)
}

func (g *gatedSink) Patch(ev *corev1.Event, data []byte) (*corev1.Event, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil, errEventsShutdown
	}
	return g.sink.Patch(ev, data)
}
