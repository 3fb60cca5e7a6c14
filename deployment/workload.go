package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Workload is a resource other than a Deployment that owns ReplicaSets
// and wants Deployment-style rollouts: rolling and recreate strategies,
// pause, rollback, revision history, the progress deadline and the
// Available and Progressing conditions. Its type (a pointer, such as
// *WebApp) says how its own spec and status hold a Deployment's: the
// controller decides on that view and writes the result back through the
// setters. Everything else comes from its object metadata: name,
// namespace, UID, generation, deletion timestamp, and the annotations,
// where the Deployment controller keeps the revision
// (deployment.kubernetes.io/revision) and reads a rollback request
// (deprecated.deployment.rollback.to).
//
// The pod template of DeploymentSpec must be complete as the API server
// stores it in a ReplicaSet, defaults included (a Deployment's template is
// defaulted when it is written; a workload's derived template is not): the
// controller finds the workload's ReplicaSets by comparing their stored
// templates with it. A ReplicaSet created from an incomplete template is
// reported as a [reconcile.Terminal] error.
//
// The status must round-trip: DeploymentStatus must return, field for
// field, what SetDeploymentStatus stored. A mapping that drops a field (a
// condition's lastUpdateTime, terminatingReplicas) makes every sync see a
// difference and write the status again, forever; the Reconciler of
// [NewWorkloadReconciler] checks this on the first workload it reads and
// refuses, with a [reconcile.Terminal] error naming the lost fields, to
// sync one whose type fails.
type Workload interface {
	metav1.Object
	runtime.Object
	// DeploymentSpec returns the rollout the workload asks for: replicas,
	// selector, pod template, strategy, minReadySeconds,
	// revisionHistoryLimit, paused and progressDeadlineSeconds.
	DeploymentSpec() appsv1.DeploymentSpec
	// SetDeploymentSpec stores a spec; only a rollback calls it, with the
	// pod template of the revision rolled back to. An error (a template
	// the workload cannot express) fails the rollback.
	SetDeploymentSpec(appsv1.DeploymentSpec) error
	// DeploymentStatus returns the status last stored.
	DeploymentStatus() appsv1.DeploymentStatus
	// SetDeploymentStatus stores a status.
	SetDeploymentStatus(appsv1.DeploymentStatus)
}

// WorkloadClient writes workloads of type W and, like [Client], the
// ReplicaSets they own.
type WorkloadClient[W Workload] interface {
	ReplicaSetWriter
	ReplicaSetPatcher
	// UpdateWorkload writes w's spec and metadata, guarded by its
	// resourceVersion (only rollbacks do).
	UpdateWorkload(ctx context.Context, w W) (W, error)
	// UpdateWorkloadStatus writes w's status through its status
	// subresource, guarded by its resourceVersion. The annotations must be
	// written too (they hold the revision), as the status subresource of
	// Deployments does, or in a second write.
	UpdateWorkloadStatus(ctx context.Context, w W) (W, error)
}

// WorkloadConfig configures [NewWorkloadReconciler]. Kind, Workloads,
// ReplicaSets and Client are required; the other fields are as in
// [ReconcilerConfig].
type WorkloadConfig[W Workload] struct {
	// Kind is the workload's group, version and kind: the controller
	// references of its ReplicaSets carry it.
	Kind schema.GroupVersionKind
	// Workloads reads workloads, usually from an informer cache.
	Workloads reconcile.Getter[W]
	// Live reads a workload bypassing caches, before ReplicaSets are
	// adopted; nil means Workloads.
	Live        reconcile.Getter[W]
	ReplicaSets reconcile.Lister[*appsv1.ReplicaSet]
	Pods        reconcile.ByController[*corev1.Pod]
	Client      WorkloadClient[W]
	// Events records events about workloads (the workload read from
	// Workloads is the event's object); nil discards them.
	Events      EventRecorder
	Clock       clock.PassiveClock
	EagerStatus bool
	// FeatureGates: see [ReconcilerConfig.FeatureGates].
	FeatureGates features.Gates
}

// NewWorkloadReconciler returns a Reconciler that syncs workloads of type
// W exactly as it syncs Deployments: keys name workloads, the decisions
// are [Sync]'s, the ReplicaSets it creates and adopts are controlled by
// the workload (cfg.Kind), events are recorded against the workload, and
// every write of the workload goes through cfg.Client. Feed its queue with
// [EventRules] whose Kind is cfg.Kind.Kind and whose Deployments are
// [WorkloadViews] of the workload cache.
func NewWorkloadReconciler[W Workload](cfg WorkloadConfig[W]) (*Reconciler, error) {
	switch {
	case cfg.Kind.Kind == "" || cfg.Kind.Version == "":
		return nil, errors.New("deployment: WorkloadConfig.Kind needs a version and a kind")
	case cfg.Workloads == nil:
		return nil, errors.New("deployment: WorkloadConfig.Workloads is nil")
	case cfg.Client == nil:
		return nil, errors.New("deployment: WorkloadConfig.Client is nil")
	}
	live := cfg.Live
	if live == nil {
		live = cfg.Workloads
	}
	check := &roundTrip{}
	views := reconcile.GetterFunc[*appsv1.Deployment](func(ctx context.Context, key types.NamespacedName) (*appsv1.Deployment, error) {
		w, err := cfg.Workloads.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if err := check.verify(w); err != nil {
			return nil, reconcile.Terminal(fmt.Errorf("workload %s: %w", key, err))
		}
		return viewOf(w), nil
	})
	var events EventRecorder
	if cfg.Events != nil {
		events = workloadEvents[W]{workloads: cfg.Workloads, events: cfg.Events}
	}
	return NewReconciler(ReconcilerConfig{
		Deployments:  views,
		ReplicaSets:  cfg.ReplicaSets,
		Pods:         cfg.Pods,
		Live:         viewGetter[W]{live},
		Client:       workloadClient[W]{c: cfg.Client, kind: cfg.Kind, workloads: cfg.Workloads},
		Events:       events,
		Clock:        cfg.Clock,
		EagerStatus:  cfg.EagerStatus,
		FeatureGates: cfg.FeatureGates,
	})
}

// WorkloadViews reads workloads as the Deployments the controller decides
// on: what [EventRules] need to map ReplicaSet and pod events to workload
// keys.
func WorkloadViews[W Workload](r reconcile.Reader[W]) reconcile.Reader[*appsv1.Deployment] {
	return viewReader[W]{r}
}

// viewOf is the Deployment the controller decides on for w: w's object
// metadata (copied: the view is written to), spec and status.
func viewOf(w Workload) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: w.GetNamespace(), Name: w.GetName(), UID: w.GetUID(),
			ResourceVersion: w.GetResourceVersion(), Generation: w.GetGeneration(),
			CreationTimestamp: w.GetCreationTimestamp(), DeletionTimestamp: w.GetDeletionTimestamp(),
			Labels: w.GetLabels(), Annotations: w.GetAnnotations(),
		},
		Spec:   w.DeploymentSpec(),
		Status: w.DeploymentStatus(),
	}
	return d.DeepCopy()
}

type viewGetter[W Workload] struct{ g reconcile.Getter[W] }

func (v viewGetter[W]) Get(ctx context.Context, key types.NamespacedName) (*appsv1.Deployment, error) {
	w, err := v.g.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return viewOf(w), nil
}

type viewReader[W Workload] struct{ r reconcile.Reader[W] }

func (v viewReader[W]) Get(ctx context.Context, key types.NamespacedName) (*appsv1.Deployment, error) {
	return viewGetter[W]{v.r}.Get(ctx, key)
}

func (v viewReader[W]) List(ctx context.Context, namespace string, selector labels.Selector) ([]*appsv1.Deployment, error) {
	ws, err := v.r.List(ctx, namespace, selector)
	if err != nil {
		return nil, err
	}
	out := make([]*appsv1.Deployment, len(ws))
	for i, w := range ws {
		out[i] = viewOf(w)
	}
	return out, nil
}

// workloadClient writes what a plan for a view says to the workload: the
// view's status and spec through the workload's setters, and the
// ReplicaSets with the workload as their controller.
type workloadClient[W Workload] struct {
	c         WorkloadClient[W]
	kind      schema.GroupVersionKind
	workloads reconcile.Getter[W]
}

// owned returns a copy of rs whose Deployment controller reference (the
// one Sync writes for the view) names the workload's kind.
func (c workloadClient[W]) owned(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	rs = rs.DeepCopy()
	for i, ref := range rs.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == controllerKind.Kind && ref.APIVersion == controllerKind.GroupVersion().String() {
			rs.OwnerReferences[i].APIVersion, rs.OwnerReferences[i].Kind = c.kind.GroupVersion().String(), c.kind.Kind
		}
	}
	return rs
}

// CreateReplicaSet creates rs with the workload as its controller. If the
// API server stored another pod template than the one sent (it filled in
// defaults), the workload's DeploymentSpec is not in the server's form: the
// controller would never recognise the ReplicaSet as the workload's (and
// take it for a hash collision, sync after sync). That is a Terminal error
// naming the cause.
func (c workloadClient[W]) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out, err := c.c.CreateReplicaSet(ctx, c.owned(rs))
	if err == nil && out != nil && !apiequality.Semantic.DeepEqual(out.Spec.Template, rs.Spec.Template) {
		return out, reconcile.Terminal(fmt.Errorf("%s %s/%s: the API server stored another pod template than DeploymentSpec returned (did it apply defaults the workload's template lacks?); stored %+v, sent %+v",
			c.kind.Kind, rs.Namespace, rs.Name, out.Spec.Template.Spec, rs.Spec.Template.Spec))
	}
	return out, err
}

func (c workloadClient[W]) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return c.c.UpdateReplicaSet(ctx, c.owned(rs))
}

func (c workloadClient[W]) DeleteReplicaSet(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	return c.c.DeleteReplicaSet(ctx, key, uid)
}

func (c workloadClient[W]) GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return c.c.GetReplicaSet(ctx, key)
}

// PatchReplicaSet sends adoption patches with the workload's kind in the
// controller reference; release patches, which name only UIDs, as they are.
func (c workloadClient[W]) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	var p struct {
		Metadata struct {
			OwnerReferences []patchOwnerRef `json:"ownerReferences"`
			UID             types.UID       `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &p); err == nil && len(p.Metadata.OwnerReferences) == 1 && p.Metadata.OwnerReferences[0].Kind == controllerKind.Kind {
		p.Metadata.OwnerReferences[0].APIVersion, p.Metadata.OwnerReferences[0].Kind = c.kind.GroupVersion().String(), c.kind.Kind
		if data, err = json.Marshal(p); err != nil {
			return nil, fmt.Errorf("deployment: adoption patch for %s: %w", c.kind.Kind, err)
		}
	}
	return c.c.PatchReplicaSet(ctx, key, pt, data)
}

// workload returns a copy of the cached workload of view d, at d's
// resourceVersion (a write is then guarded by the version the sync read).
func (c workloadClient[W]) workload(ctx context.Context, d *appsv1.Deployment) (W, error) {
	w, err := c.workloads.Get(ctx, KeyOf(d))
	if err != nil {
		var zero W
		return zero, err
	}
	cp, ok := w.DeepCopyObject().(W)
	if !ok {
		var zero W
		return zero, fmt.Errorf("deployment: %T.DeepCopyObject returned a %T", w, w.DeepCopyObject())
	}
	cp.SetResourceVersion(d.ResourceVersion)
	cp.SetAnnotations(d.Annotations)
	return cp, nil
}

func (c workloadClient[W]) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	w, err := c.workload(ctx, d)
	if err != nil {
		return nil, err
	}
	if err := w.SetDeploymentSpec(d.Spec); err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.kind.Kind, KeyOf(d), err)
	}
	out, err := c.c.UpdateWorkload(ctx, w)
	if err != nil {
		return nil, err
	}
	return viewOf(out), nil
}

func (c workloadClient[W]) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	w, err := c.workload(ctx, d)
	if err != nil {
		return nil, err
	}
	w.SetDeploymentStatus(d.Status)
	out, err := c.c.UpdateWorkloadStatus(ctx, w)
	if err != nil {
		return nil, err
	}
	return viewOf(out), nil
}

// workloadEvents records the events of a view against the workload.
type workloadEvents[W Workload] struct {
	workloads reconcile.Getter[W]
	events    EventRecorder
}

func (e workloadEvents[W]) Event(obj runtime.Object, eventType, reason, message string) {
	if d, ok := obj.(*appsv1.Deployment); ok {
		w, err := e.workloads.Get(context.Background(), KeyOf(d))
		if err != nil {
			return // the workload is gone: nothing to attach the event to
		}
		obj = w
	}
	e.events.Event(obj, eventType, reason, message)
}

// roundTrip checks, once, that a workload type keeps every field of a
// status and a spec it is given.
type roundTrip struct {
	once sync.Once
	err  error
}

func (r *roundTrip) verify(w Workload) error {
	r.once.Do(func() { r.err = verifyRoundTrip(w) })
	return r.err
}

// verifyRoundTrip stores a status with every field set in a copy of w and
// reads it back.
func verifyRoundTrip(w Workload) error {
	cp, ok := w.DeepCopyObject().(Workload)
	if !ok {
		return fmt.Errorf("%T.DeepCopyObject does not return a Workload", w)
	}
	t := metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	one, two := int32(1), int32(2)
	st := appsv1.DeploymentStatus{
		ObservedGeneration: 7, Replicas: 5, UpdatedReplicas: 4, ReadyReplicas: 3, AvailableReplicas: 2,
		UnavailableReplicas: 3, TerminatingReplicas: &one, CollisionCount: &two,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: "True",
			LastUpdateTime: t, LastTransitionTime: t, Reason: "NewReplicaSetAvailable", Message: "m"}},
	}
	cp.SetDeploymentStatus(st)
	if got := cp.DeploymentStatus(); !apiequality.Semantic.DeepEqual(got, st) {
		return fmt.Errorf("%T does not keep the status it is given (set %+v, got %+v): every sync would write it again", w, st, got)
	}
	return nil
}
