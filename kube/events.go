package kube

import (
	"context"
	"errors"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
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
// in flight. The lock is held only to count them: close waits on the
// WaitGroup, which a testing/synctest bubble counts as durably blocked
// (a write in flight may wait for its rate limiter's virtual time).
type gatedSink struct {
	mu       sync.Mutex
	closed   bool
	inFlight sync.WaitGroup
	sink     record.EventSink
}

func (g *gatedSink) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.inFlight.Wait()
}

// enter counts a write in; false once closed.
func (g *gatedSink) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inFlight.Add(1)
	return true
}

func (g *gatedSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	if !g.enter() {
		return nil, errEventsShutdown
	}
	defer g.inFlight.Done()
	return g.sink.Create(ev)
}

func (g *gatedSink) Update(ev *corev1.Event) (*corev1.Event, error) {
	if !g.enter() {
		return nil, errEventsShutdown
	}
	defer g.inFlight.Done()
	return g.sink.Update(ev)
}

func (g *gatedSink) Patch(ev *corev1.Event, data []byte) (*corev1.Event, error) {
	if !g.enter() {
		return nil, errEventsShutdown
	}
	defer g.inFlight.Done()
	return g.sink.Patch(ev, data)
}

// EventRecorders are the event recorders of the two controllers, through
// either API: [Events] (core/v1) or [EventsAPI] (events.k8s.io/v1).
type EventRecorders interface {
	Deployment() reconcile.EventRecorder
	ReplicaSet() reconcile.EventRecorder
	// Shutdown stops the recorders' goroutines.
	Shutdown()
}

var (
	_ EventRecorders = (*Events)(nil)
	_ EventRecorders = (*EventsAPI)(nil)
)

// EventsAPI records events.k8s.io/v1 Events through client-go's events
// broadcaster (tools/events), which folds repeats into an event series.
// The controllers' reasons and messages are upstream's, unchanged, as the
// note; the action, which the new API requires and the controllers do not
// name, is derived from the reason by [EventAction]. Create it with
// [StartEventsAPI].
type EventsAPI struct {
	b      events.EventBroadcaster
	cancel context.CancelFunc
}

// StartEventsAPI starts an events.k8s.io/v1 broadcaster that writes events
// with cs and logs each at verbosity 3 to the logger in ctx. It runs
// goroutines until ctx is done or [EventsAPI.Shutdown] is called.
func StartEventsAPI(ctx context.Context, cs kubernetes.Interface) (*EventsAPI, error) {
	ctx, cancel := context.WithCancel(ctx)
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	b.StartStructuredLogging(3)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		return nil, err
	}
	return &EventsAPI{b: b, cancel: cancel}, nil
}

// Recorder returns a recorder whose events name component as their
// reporting controller.
func (e *EventsAPI) Recorder(component string) reconcile.EventRecorder {
	r := e.b.NewRecorder(scheme.Scheme, component)
	return reconcile.EventRecorderFunc(func(obj runtime.Object, eventType, reason, message string) {
		r.Eventf(obj, nil, eventType, reason, EventAction(reason), "%s", message)
	})
}

// Deployment returns the recorder for the Deployment controller.
func (e *EventsAPI) Deployment() reconcile.EventRecorder { return e.Recorder(DeploymentComponent) }

// ReplicaSet returns the recorder for the ReplicaSet controller.
func (e *EventsAPI) ReplicaSet() reconcile.EventRecorder { return e.Recorder(ReplicaSetComponent) }

// Shutdown stops the broadcaster and its goroutines.
func (e *EventsAPI) Shutdown() {
	e.b.Shutdown()
	e.cancel()
}

// EventAction names the action of an events.k8s.io/v1 Event (what the
// controller did, or failed to do) for the reasons of the two
// controllers: Scale for ScalingReplicaSet, Create and Delete for the
// ReplicaSet controller's pod events and the Deployment controller's
// ReplicaSetCreateError, Rollback for the DeploymentRollback… reasons, and
// Sync for any other (SelectingAll, …).
func EventAction(reason string) string {
	switch reason {
	case rollout.EventScalingReplicaSet:
		return "Scale"
	case replicaset.ReasonSuccessfulCreate, replicaset.ReasonFailedCreate, rollout.ReasonFailedRSCreate:
		return "Create"
	case replicaset.ReasonSuccessfulDelete, replicaset.ReasonFailedDelete:
		return "Delete"
	case rollout.EventRollbackDone, rollout.EventRollbackRevisionNotFound, rollout.EventRollbackTemplateUnchanged:
		return "Rollback"
	}
	return "Sync"
}
