package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// AddWorkloadController registers, under the name "<kind>-controller", a
// controller that gives the custom resources of kind (a type T whose
// pointer implements deployment.Workload) the Deployment controller's
// rollouts: deployment.NewWorkloadReconciler over the manager's cache,
// client and event recorder, fed by its own events and upstream's
// ReplicaSet and pod rules for that kind. The type must be in the
// manager's scheme; newList makes an empty list of it and items returns a
// list's items. The ReplicaSet controller ([AddReplicaSetController])
// manages the workloads' ReplicaSets as any other.
//
//	err := controllerruntime.AddWorkloadController(mgr, webapp.Kind,
//		func() *webapp.List { return &webapp.List{} },
//		func(l *webapp.List) []webapp.WebApp { return l.Items },
//		controllerruntime.Options{})
//
// Unlike [AddDeploymentController] it does not wait for its own writes to
// reach the cache before syncing a workload again.
func AddWorkloadController[T any, PT interface {
	*T
	deployment.Workload
	client.Object
}, L client.ObjectList](mgr manager.Manager, kind schema.GroupVersionKind, newList func() L, items func(L) []T, opts Options) error {
	switch {
	case mgr == nil:
		return errors.New("controllerruntime: nil Manager")
	case newList == nil || items == nil:
		return errors.New("controllerruntime: AddWorkloadController needs newList and items")
	}
	if err := opts.validate(); err != nil {
		return err
	}
	if err := IndexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	name := strings.ToLower(kind.Kind) + "-controller"
	c := mgr.GetCache()
	workloads := reader[T, PT, L]{r: c, newList: newList, items: items}
	live := reader[T, PT, L]{r: mgr.GetAPIReader(), newList: newList, items: items}
	rss, pods := replicaSetReader(c), podReader(c)
	r, err := deployment.NewWorkloadReconciler(deployment.WorkloadConfig[PT]{
		Kind: kind, Workloads: workloads, Live: live, ReplicaSets: rss, Pods: pods,
		Client:      workloadWriter[PT]{Writer: Writer{Client: mgr.GetClient(), Live: mgr.GetAPIReader()}},
		Events:      mgr.GetEventRecorderFor(name), //nolint:staticcheck // core/v1 Events, as kube-controller-manager records them
		EagerStatus: opts.EagerStatus, FeatureGates: opts.FeatureGates,
	})
	if err != nil {
		return fmt.Errorf("controllerruntime: %w", err)
	}
	do := func(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
		if opts.Selector != nil {
			if w, err := workloads.Get(ctx, key); err == nil && !opts.Selector.Matches(labels.Set(w.GetLabels())) {
				return reconcile.Result{}, nil
			}
		}
		return r.Reconcile(ctx, key)
	}
	ctl, err := controller.New(name, mgr, opts.controllerOptions(adapt(do)))
	if err != nil {
		return fmt.Errorf("controllerruntime: %w", err)
	}
	rules := deployment.EventRules{Deployments: deployment.WorkloadViews[PT](workloads), ReplicaSets: rss, Kind: kind.Kind}
	self := func(_ context.Context, w PT) []reconcile.Enqueue {
		return []reconcile.Enqueue{{Key: types.NamespacedName{Namespace: w.GetNamespace(), Name: w.GetName()}}}
	}
	q := queue{namespace: opts.Namespace, batch: opts.BatchPeriod}
	for _, src := range []source.Source{
		source.Kind(c, PT(new(T)), handlerFor(q, self, func(ctx context.Context, _, cur PT) []reconcile.Enqueue { return self(ctx, cur) }, self)),
		source.Kind(c, &appsv1.ReplicaSet{}, handlerFor(q, rules.ReplicaSetAdded, rules.ReplicaSetUpdated, rules.ReplicaSetDeleted)),
		source.Kind(c, &corev1.Pod{}, handlerFor(q, nil, nil, rules.PodDeleted)),
	} {
		if err := ctl.Watch(src); err != nil {
			return fmt.Errorf("controllerruntime: %w", err)
		}
	}
	return nil
}

// workloadWriter writes workloads with a controller-runtime client, and
// their ReplicaSets with the embedded Writer.
type workloadWriter[PT interface {
	deployment.Workload
	client.Object
}] struct {
	Writer
}

// UpdateWorkload writes w's spec and metadata.
func (w workloadWriter[PT]) UpdateWorkload(ctx context.Context, obj PT) (PT, error) {
	out, ok := obj.DeepCopyObject().(PT)
	if !ok {
		return obj, fmt.Errorf("controllerruntime: %T.DeepCopyObject returned another type", obj)
	}
	if err := w.Client.Update(ctx, out); err != nil {
		var zero PT
		return zero, err
	}
	return out, nil
}

// UpdateWorkloadStatus writes w's status, then its annotations (where the
// revision lives) with a merge patch if the status subresource did not
// keep them.
func (w workloadWriter[PT]) UpdateWorkloadStatus(ctx context.Context, obj PT) (PT, error) {
	var zero PT
	out, ok := obj.DeepCopyObject().(PT)
	if !ok {
		return zero, fmt.Errorf("controllerruntime: %T.DeepCopyObject returned another type", obj)
	}
	want := obj.GetAnnotations()
	if err := w.Client.Status().Update(ctx, out); err != nil {
		return zero, err
	}
	if maps.Equal(out.GetAnnotations(), want) {
		return out, nil
	}
	base, ok := out.DeepCopyObject().(PT)
	if !ok {
		return zero, fmt.Errorf("controllerruntime: %T.DeepCopyObject returned another type", obj)
	}
	out.SetAnnotations(want)
	if err := w.Client.Patch(ctx, out, client.MergeFrom(base)); err != nil {
		return zero, err
	}
	return out, nil
}
