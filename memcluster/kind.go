package memcluster

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"maps"
)

// Kind describes how the cluster stores one API type: the server-side
// strategy of a kube-apiserver registry, reduced to what controllers can
// observe. Only GVK, Resource and New are required; nil hooks do nothing.
type Kind[T Object] struct {
	// GVK is the group, version and kind, e.g. apps/v1 Deployment. Owner
	// references are resolved against it for garbage collection.
	GVK schema.GroupVersionKind
	// Resource is the lower-case plural name used in errors, e.g. "deployments".
	Resource string
	// ClusterScoped kinds ignore namespaces.
	ClusterScoped bool
	// New returns an empty object.
	New func() T
	// Generation returns the part of an object whose change bumps
	// metadata.generation (usually the spec). Nil: the generation stays 1.
	Generation func(obj T) any
	// CopyStatus copies the status of src into dst. A kind with a status
	// subresource sets it: Update then keeps the stored status and
	// UpdateStatus changes nothing else. Nil: no status subresource.
	CopyStatus func(dst, src T)
	// StatusMeta copies the metadata a status write may change from src
	// into dst, after CopyStatus (kube-apiserver's status strategies keep
	// annotations, for example: the Deployment controller writes its
	// revision annotation through the status subresource). Nil: a status
	// write changes only the status.
	StatusMeta func(dst, src T)
	// PrepareCreate resets fields the server owns on create (the status).
	PrepareCreate func(obj T)
	// Default applies API defaults. It runs on every create and update.
	Default func(obj T)
	// Validate returns the errors of obj; old is nil-valued on create.
	Validate func(obj, old T) field.ErrorList
	// ValidatesMetadata says Validate validates the metadata too (as
	// apiextensions-apiserver's strategies do): memcluster then does not,
	// lest every error of metadata be reported twice.
	ValidatesMetadata bool
	// GracePeriod returns the graceful-deletion period in seconds for obj
	// given the requested one (nil when the request has none). Zero or a
	// nil hook deletes at once.
	GracePeriod func(obj T, requested *int64) int64

	// PrepareUpdate runs first on every update (not on status writes),
	// with the object as sent, its resourceVersion included, and the
	// stored one. It may copy server-owned fields from old (a Service
	// keeps its allocated clusterIP) or refuse the update with field
	// errors, answered as Invalid (a custom resource refuses an update
	// without a resourceVersion). Nil: nothing.
	PrepareUpdate func(obj, old T) field.ErrorList
	// NewList returns an empty list of this kind, e.g. *appsv1.DeploymentList;
	// [Handler] serves lists in it. Nil: lists are served as JSON only.
	NewList func() runtime.Object
	// NoStrategicMerge refuses strategic merge patches with 415
	// Unsupported Media Type, as kube-apiserver does for custom resources.
	NoStrategicMerge bool
	// RequireResourceVersion refuses an update without a resourceVersion
	// (422, as kube-apiserver answers for custom resources and
	// CustomResourceDefinitions); false updates unconditionally.
	RequireResourceVersion bool
	// ValidateStatus returns the errors of a status write: obj is the
	// stored object with the status (and status metadata) of the write,
	// old the stored one. Nil: status writes are not validated.
	ValidateStatus func(obj, old T) field.ErrorList
	// PrepareDelete runs when the deletion of an object starts, on a
	// private copy of it, before its finalizers are looked at: it may add
	// finalizers and conditions. If it sets the deletionTimestamp, the
	// deletion is its own, and memcluster stores obj as it is (no grace
	// period, no generation bump), as kube-apiserver's registry of
	// CustomResourceDefinitions starts their deletion with its cleanup
	// finalizer. Nil: nothing.
	PrepareDelete func(obj T)
	// Stored, if set, is told about every write of an object of this kind
	// once it is stored (created, updated, its status written, deleted or
	// marked for deletion), with the stored snapshot (read it, never
	// modify it). It runs with the cluster's lock held, inside the request
	// that wrote, and may write more through tx: what it writes is stored
	// before that request returns, without admission (no faults, no
	// [Gate]), as kube-apiserver's own controllers would have written it
	// soon after. Hooks of writes made by hooks run after the hook that
	// made them returns, in the order of the writes.
	Stored func(tx *Tx, ev watch.EventType, obj T)
	// TypeConverter gives type information for server-side apply and
	// managedFields of this kind; nil: the cluster's Config.TypeConverter.
	TypeConverter managedfields.TypeConverter

	// statusUpdate, which only the built-in kinds set, does what
	// CopyStatus and StatusMeta do to a copy of old, without the copy: it
	// returns a new object that shares everything but the status and the
	// status metadata with old (stored, so never modified) and takes them
	// over from in (private to the write, and dropped after it).
	statusUpdate func(old, in T) T
	// statusEqual reports whether old and the result of statusUpdate are
	// semantically equal but for the resourceVersion, comparing only the
	// parts statusUpdate replaced (the rest is shared).
	statusEqual func(old, next T) bool

	// The hooks of custom kinds (see custom.go), which store objects in
	// one version and serve them in several. asVersionOf returns the
	// stored object old as the version of in; toStorage converts in, of a
	// served version, to the stored one.
	asVersionOf func(old, in T) T
	toStorage   func(in T) (T, error)
}

// semanticEqual is apiequality.Semantic.DeepEqual, as the whole-object
// comparison of a write applies it.
func semanticEqual(a, b any) bool { return apiequality.Semantic.DeepEqual(a, b) }

func (k Kind[T]) groupKind() schema.GroupKind { return k.GVK.GroupKind() }

func (k Kind[T]) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}
}

func podKind() Kind[*corev1.Pod] {
	return Kind[*corev1.Pod]{
		GVK:        corev1.SchemeGroupVersion.WithKind("Pod"),
		Resource:   "pods",
		New:        func() *corev1.Pod { return &corev1.Pod{} },
		NewList:    func() runtime.Object { return &corev1.PodList{} },
		Generation: func(p *corev1.Pod) any { return p.Spec },
		CopyStatus: func(dst, src *corev1.Pod) { dst.Status = *src.Status.DeepCopy() },
		// pods/status keeps labels and annotations (not owner references).
		StatusMeta: func(dst, src *corev1.Pod) {
			dst.Labels = maps.Clone(src.Labels)
			dst.Annotations = maps.Clone(src.Annotations)
		},
		statusUpdate: func(old, in *corev1.Pod) *corev1.Pod {
			next := *old
			next.Status, next.Labels, next.Annotations = in.Status, in.Labels, in.Annotations
			return &next
		},
		statusEqual: func(old, next *corev1.Pod) bool {
			return semanticEqual(old.Status, next.Status) && semanticEqual(old.Labels, next.Labels) && semanticEqual(old.Annotations, next.Annotations)
		},
		PrepareCreate: func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(p)}
		},
		Default:     defaultPod,
		Validate:    validatePod,
		GracePeriod: podGracePeriod,
	}
}

func replicaSetKind() Kind[*appsv1.ReplicaSet] {
	return Kind[*appsv1.ReplicaSet]{
		GVK:        appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		Resource:   "replicasets",
		New:        func() *appsv1.ReplicaSet { return &appsv1.ReplicaSet{} },
		NewList:    func() runtime.Object { return &appsv1.ReplicaSetList{} },
		Generation: func(rs *appsv1.ReplicaSet) any { return rs.Spec },
		CopyStatus: func(dst, src *appsv1.ReplicaSet) { dst.Status = *src.Status.DeepCopy() },
		// replicasets/status resets only the spec.
		StatusMeta: func(dst, src *appsv1.ReplicaSet) {
			dst.Labels = maps.Clone(src.Labels)
			dst.Annotations = maps.Clone(src.Annotations)
		},
		statusUpdate: func(old, in *appsv1.ReplicaSet) *appsv1.ReplicaSet {
			next := *old
			next.Status, next.Labels, next.Annotations = in.Status, in.Labels, in.Annotations
			return &next
		},
		statusEqual: func(old, next *appsv1.ReplicaSet) bool {
			return semanticEqual(old.Status, next.Status) && semanticEqual(old.Labels, next.Labels) && semanticEqual(old.Annotations, next.Annotations)
		},
		PrepareCreate: func(rs *appsv1.ReplicaSet) { rs.Status = appsv1.ReplicaSetStatus{} },
		Default:       defaultReplicaSet,
		Validate:      validateReplicaSet,
	}
}

// deploymentGeneration mirrors the apiserver: annotations bump the
// generation too, because the controller copies them to ReplicaSets.
type deploymentGeneration struct {
	Spec        appsv1.DeploymentSpec
	Annotations map[string]string
}

func deploymentKind() Kind[*appsv1.Deployment] {
	return Kind[*appsv1.Deployment]{
		GVK:      appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Resource: "deployments",
		New:      func() *appsv1.Deployment { return &appsv1.Deployment{} },
		NewList:  func() runtime.Object { return &appsv1.DeploymentList{} },
		Generation: func(d *appsv1.Deployment) any {
			return deploymentGeneration{Spec: d.Spec, Annotations: d.Annotations}
		},
		CopyStatus: func(dst, src *appsv1.Deployment) { dst.Status = *src.Status.DeepCopy() },
		// deployments/status resets the spec and the labels; annotations
		// (the revision) go through, without a generation bump.
		StatusMeta: func(dst, src *appsv1.Deployment) { dst.Annotations = maps.Clone(src.Annotations) },
		statusUpdate: func(old, in *appsv1.Deployment) *appsv1.Deployment {
			next := *old
			next.Status, next.Annotations = in.Status, in.Annotations
			return &next
		},
		statusEqual: func(old, next *appsv1.Deployment) bool {
			return semanticEqual(old.Status, next.Status) && semanticEqual(old.Annotations, next.Annotations)
		},
		PrepareCreate: func(d *appsv1.Deployment) { d.Status = appsv1.DeploymentStatus{} },
		Default:       defaultDeployment,
		Validate:      validateDeployment,
	}
}

// podGracePeriod follows the pod registry: an unscheduled or finished pod
// goes at once; otherwise the request wins over the spec.
func podGracePeriod(p *corev1.Pod, requested *int64) int64 {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return 0
	}
	g := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		g = *p.Spec.TerminationGracePeriodSeconds
	}
	if requested != nil {
		g = *requested
	}
	if g < 0 {
		g = 1 // as the apiserver does for negative periods
	}
	return g
}

func qosClass(p *corev1.Pod) corev1.PodQOSClass {
	for _, c := range p.Spec.Containers {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			return corev1.PodQOSBurstable
		}
	}
	return corev1.PodQOSBestEffort
}
