package controllerruntime

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/shard"
)

// queue turns what an event rule asks for into calls of a
// controller-runtime work queue.
type queue struct {
	namespace string        // "" for all
	batch     time.Duration // Options.BatchPeriod
	shard     shard.Set     // Options.Shard; zero for all
}

func (q queue) add(wq workqueue.TypedRateLimitingInterface[crreconcile.Request], es []reconcile.Enqueue) {
	for _, e := range es {
		if q.namespace != "" && e.Key.Namespace != q.namespace {
			continue
		}
		if !q.shard.IsZero() && !q.shard.ContainsNamespace(e.Key.Namespace) {
			continue
		}
		req := crreconcile.Request{NamespacedName: e.Key}
		switch {
		case e.After > 0:
			wq.AddAfter(req, e.After)
		case e.Batch && q.batch > 0:
			wq.AddAfter(req, q.batch)
		default:
			wq.Add(req)
		}
	}
}

// handlerFor applies event rules to the events of one kind; a nil rule
// ignores that kind of event. controller-runtime hands deletes over with
// the object's last known state, tombstones included.
func handlerFor[T client.Object](q queue,
	add func(context.Context, T) []reconcile.Enqueue,
	update func(context.Context, T, T) []reconcile.Enqueue,
	del func(context.Context, T) []reconcile.Enqueue,
) handler.TypedEventHandler[T, crreconcile.Request] {
	h := handler.TypedFuncs[T, crreconcile.Request]{}
	if add != nil {
		h.CreateFunc = func(ctx context.Context, e event.TypedCreateEvent[T], wq workqueue.TypedRateLimitingInterface[crreconcile.Request]) {
			q.add(wq, add(ctx, e.Object))
		}
	}
	if update != nil {
		h.UpdateFunc = func(ctx context.Context, e event.TypedUpdateEvent[T], wq workqueue.TypedRateLimitingInterface[crreconcile.Request]) {
			q.add(wq, update(ctx, e.ObjectOld, e.ObjectNew))
		}
	}
	if del != nil {
		h.DeleteFunc = func(ctx context.Context, e event.TypedDeleteEvent[T], wq workqueue.TypedRateLimitingInterface[crreconcile.Request]) {
			q.add(wq, del(ctx, e.Object))
		}
	}
	return h
}

// observed records a ReplicaSet rule's observations in exp before its
// keys are enqueued (the sync they trigger must see them).
func observed[T any](exp *replicaset.Expectations, rule func(context.Context, T) ([]reconcile.Enqueue, []replicaset.Observation)) func(context.Context, T) []reconcile.Enqueue {
	return func(ctx context.Context, obj T) []reconcile.Enqueue {
		es, obs := rule(ctx, obj)
		exp.Observe(obs...)
		return es
	}
}

// observed2 is observed for update rules.
func observed2[T any](exp *replicaset.Expectations, rule func(context.Context, T, T) ([]reconcile.Enqueue, []replicaset.Observation)) func(context.Context, T, T) []reconcile.Enqueue {
	return func(ctx context.Context, old, cur T) []reconcile.Enqueue {
		es, obs := rule(ctx, old, cur)
		exp.Observe(obs...)
		return es
	}
}
