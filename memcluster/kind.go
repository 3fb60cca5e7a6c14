package memcluster

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"maps"

	"github.com/ctrlkit/ctrlkit/defaults"
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
	// [NewHandler] serves lists in it. Nil: lists are served as JSON only.
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
	// [Config.Gate]), as kube-apiserver's own controllers would have written it
	// soon after. Hooks of writes made by hooks run after the hook that
	// made them returns, in the order of the writes.
	Stored func(tx *Tx, ev watch.EventType, obj T)
	// ShortNames and Categories are listed by discovery, as a
	// CustomResourceDefinition's spec.names lists them: kubectl resolves
	// short names ("sts"), and "kubectl get all" shows the kinds of the
	// category "all". Nil: none.
	ShortNames, Categories []string
	// TypeConverter gives the kind's type to apimachinery's field
	// managers, for managedFields and server-side apply (a CRD's OpenAPI
	// schema, say, through managedfields.NewTypeConverter). Nil: the
	// cluster's [Config.TypeConverter]. A kind that neither has a type
	// for is not tracked, and an apply to it is answered 415. A kind with
	// NoStrategicMerge is a custom resource for the field managers too
	// (kube-apiserver's CRD field manager; its status subresource resets
	// all but the status).
	TypeConverter managedfields.TypeConverter

	// validName validates metadata.name (prefix: a generateName); nil
	// means a DNS subdomain, as for most kinds.
	validName func(name string, prefix bool) []string

	// SelectableFields returns the fields of obj that field selectors can
	// name, metadata.name (and metadata.namespace for a namespaced kind)
	// included, as a kube-apiserver registry's GetAttrs does; a selector
	// naming a field it does not return (for the empty object New returns)
	// is refused with 400 "field label not supported". Nil: the fields
	// kube-apiserver v1.37 serves for the kind's group, version and kind
	// (pods' spec.nodeName and status.phase, events' involvedObject.*,
	// ...), or only metadata's for a kind it does not serve.
	SelectableFields func(obj T) fields.Set

	// statusUpdate, which only the built-in kinds set, does what
	// CopyStatus and StatusMeta do to a copy of old (and what the kind's
	// status strategy adds, such as a PersistentVolume's phase transition
	// time), without copying all of old where it can: it
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
	// servesVersion, if set, reports whether the kind is served in
	// version too: its writes in that version are recorded in
	// managedFields under that version, by that version's field managers.
	servesVersion func(version string) bool
	// customFields, if set, answers the field selectors of a request in
	// version ("": the storage version) instead of the kind's fixed ones.
	customFields func(version string) fieldSelection[T]
	// fieldManagerView, if set, adds to a copy of an object being created
	// or updated, as sent and defaulted, what kube-apiserver's conversion
	// to the served version puts in the object its field manager compares
	// (a DaemonSet's template generation annotation, "0" when not sent).
	fieldManagerView func(obj T)
	// statusKeep, if set, runs on every status write after the status is
	// taken over: it may fill in, in next (private to the write), what
	// the status strategy keeps from old when a write leaves it out.
	statusKeep func(next, old T)
}

// semanticEqual is apiequality.Semantic.DeepEqual, as the whole-object
// comparison of a write applies it.
func semanticEqual(a, b any) bool { return apiequality.Semantic.DeepEqual(a, b) }

func (k Kind[T]) groupKind() schema.GroupKind { return k.GVK.GroupKind() }

func (k Kind[T]) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}
}

// nameValidator returns the validation of metadata.name of the kind.
func (k Kind[T]) nameValidator() func(string, bool) []string {
	if k.validName != nil {
		return k.validName
	}
	return apivalidation.NameIsDNSSubdomain
}

// keepObservedGenerations keeps the observedGeneration of the status and
// of its conditions where a status write leaves them out (zero), as the
// pods/status strategy does. st is private to the write.
func keepObservedGenerations(st, old *corev1.PodStatus) {
	if st.ObservedGeneration == 0 {
		st.ObservedGeneration = old.ObservedGeneration
	}
	seen := map[corev1.PodConditionType]int{}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		n := seen[c.Type] // the n-th condition of its type: validation allows repeats
		seen[c.Type]++
		if c.ObservedGeneration != 0 {
			continue
		}
		for _, o := range old.Conditions {
			if o.Type != c.Type {
				continue
			}
			if n == 0 {
				c.ObservedGeneration = o.ObservedGeneration
				break
			}
			n--
		}
	}
}

func podKind() Kind[*corev1.Pod] {
	return Kind[*corev1.Pod]{
		GVK:        corev1.SchemeGroupVersion.WithKind("Pod"),
		Resource:   "pods",
		ShortNames: []string{"po"},
		Categories: []string{"all"},
		New:        func() *corev1.Pod { return &corev1.Pod{} },
		NewList:    func() runtime.Object { return &corev1.PodList{} },
		Generation: func(p *corev1.Pod) any { return p.Spec },
		CopyStatus: func(dst, src *corev1.Pod) {
			qos := dst.Status.QOSClass
			dst.Status = *src.Status.DeepCopy()
			fixPodStatus(&dst.Status, qos)
		},
		// pods/status keeps labels and annotations (not owner references).
		StatusMeta: func(dst, src *corev1.Pod) {
			dst.Labels = maps.Clone(src.Labels)
			dst.Annotations = maps.Clone(src.Annotations)
		},
		statusUpdate: func(old, in *corev1.Pod) *corev1.Pod {
			next := *old
			next.Status, next.Labels, next.Annotations = in.Status, in.Labels, in.Annotations
			fixPodStatus(&next.Status, old.Status.QOSClass)
			return &next
		},
		statusEqual: func(old, next *corev1.Pod) bool {
			return semanticEqual(old.Status, next.Status) && semanticEqual(old.Labels, next.Labels) && semanticEqual(old.Annotations, next.Annotations)
		},
		statusKeep: func(next, old *corev1.Pod) { keepObservedGenerations(&next.Status, &old.Status) },
		PrepareCreate: func(p *corev1.Pod) {
			defaults.Pod(p) // the QoS class is of the defaulted pod
			admitPod(p)
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(p)}
		},
		// The admission plugins of a pod's create run on its updates too:
		// the priority stays, the default tolerations come back.
		PrepareUpdate: func(p, old *corev1.Pod) field.ErrorList {
			if p.Spec.Priority == nil {
				p.Spec.Priority = old.Spec.Priority
			}
			if p.Spec.PreemptionPolicy == nil {
				p.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
			}
			defaultTolerations(&p.Spec)
			return nil
		},
		Default:     defaults.Pod,
		Validate:    validatePod,
		GracePeriod: podGracePeriod,
	}
}

func replicaSetKind() Kind[*appsv1.ReplicaSet] {
	return Kind[*appsv1.ReplicaSet]{
		GVK:        appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		Resource:   "replicasets",
		ShortNames: []string{"rs"},
		Categories: []string{"all"},
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
		Default:       defaults.ReplicaSet,
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
		GVK:        appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Resource:   "deployments",
		ShortNames: []string{"deploy"},
		Categories: []string{"all"},
		New:        func() *appsv1.Deployment { return &appsv1.Deployment{} },
		NewList:    func() runtime.Object { return &appsv1.DeploymentList{} },
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
		Default:       defaults.Deployment,
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

// fixPodStatus does to a written pod status what kube-apiserver does: the
// QoS class, which a status write may leave out, stays as it was, and the
// status defaults (podIP and podIPs agree) are applied.
func fixPodStatus(st *corev1.PodStatus, qos corev1.PodQOSClass) {
	if st.QOSClass == "" {
		st.QOSClass = qos
	}
	defaults.PodStatus(st)
}

// The priorities of the priority classes every cluster has.
var systemPriorities = map[string]int32{"": 0, "system-cluster-critical": 2000000000, "system-node-critical": 2000001000}

// admitPod does to a new pod what kube-apiserver's default admission
// plugins do: Priority sets its priority from its priority class (the
// built-in ones only; memcluster serves no PriorityClasses) and the
// preemption policy PreemptLowerPriority; DefaultTolerationSeconds adds
// its default tolerations.
func admitPod(p *corev1.Pod) {
	s := &p.Spec
	if prio, ok := systemPriorities[s.PriorityClassName]; ok {
		if s.Priority == nil {
			s.Priority = ptrTo(prio)
		}
		if s.PreemptionPolicy == nil {
			s.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
		}
	}
	defaultTolerations(s)
}

// defaultTolerations lets a pod tolerate not-ready and unreachable nodes
// for 300 s unless it tolerates them already.
func defaultTolerations(s *corev1.PodSpec) {
	notReady, unreachable := false, false
	for _, t := range s.Tolerations {
		noExecute := t.Effect == corev1.TaintEffectNoExecute || t.Effect == ""
		notReady = notReady || noExecute && (t.Key == corev1.TaintNodeNotReady || t.Key == "")
		unreachable = unreachable || noExecute && (t.Key == corev1.TaintNodeUnreachable || t.Key == "")
	}
	for _, t := range []struct {
		key     string
		already bool
	}{{corev1.TaintNodeNotReady, notReady}, {corev1.TaintNodeUnreachable, unreachable}} {
		if !t.already {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{
				Key: t.key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo[int64](300)})
		}
	}
}

// qosClass is the QoS class of a pod, from the CPU and memory its
// containers (init containers included) request and are limited to:
// BestEffort without any, Guaranteed when every container has CPU and
// memory limits and the requests equal them, Burstable otherwise.
func qosClass(p *corev1.Pod) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	add := func(to corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		sum := to[name]
		sum.Add(q)
		to[name] = sum
	}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			for name, q := range c.Resources.Requests {
				if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && q.Sign() > 0 {
					add(requests, name, q)
				}
			}
			limited := 0
			for name, q := range c.Resources.Limits {
				if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && q.Sign() > 0 {
					add(limits, name, q)
					limited++
				}
			}
			guaranteed = guaranteed && limited == 2
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	for name, q := range requests {
		if l, ok := limits[name]; !ok || l.Cmp(q) != 0 {
			guaranteed = false
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
