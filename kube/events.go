package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
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
	b record.EventBroadcaster
}

// StartEvents starts an event broadcaster that writes events with cs and
// logs each at verbosity 3 to the logger in ctx. It runs goroutines until
// ctx is done or [Events.Shutdown] is called; Shutdown also flushes what
// is queued.
func StartEvents(ctx context.Context, cs kubernetes.Interface) *Events {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartStructuredLogging(3)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return &Events{b: b}
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

// Shutdown stops the broadcaster.
func (e *Events) Shutdown() { e.b.Shutdown() }
