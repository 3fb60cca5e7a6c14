package replicaset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/validate"
)

// Constants shared with kube-controller-manager v1.37.
const (
	// BurstReplicas is the default cap on pods created or deleted in one
	// sync (upstream replicaset.BurstReplicas).
	BurstReplicas = 500
	// ExpectationsTimeout is how long recorded expectations are honoured
	// before a sync goes ahead anyway (upstream controller.ExpectationsTimeout).
	ExpectationsTimeout = 5 * time.Minute
	// slowStartInitialBatchSize is the size of the first create batch
	// (upstream controller.slowStartInitialBatchSize).
	slowStartInitialBatchSize = 1
	// PodDeletionCostAnnotation lowers or raises a pod's preference for
	// deletion (upstream core.PodDeletionCost).
	PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
)

// controllerKindName is the Kind in the controller references of our pods.
const controllerKindName = "ReplicaSet"

// Event reasons, as emitted by upstream's pod control. FailedCreate and
// FailedDelete are also the reasons of the ReplicaFailure condition of a
// sync that failed to create or delete (empty when it did neither).
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
)

// ErrNoLabels is returned by [NewPod] for a template without labels; the
// text is upstream's.
var ErrNoLabels = validate.ErrNoLabels

// IsPodActive reports whether p is neither terminal (Succeeded, Failed) nor
// being deleted (upstream controller.IsPodActive). A nil pod is not.
func IsPodActive(p *corev1.Pod) bool {
	return p != nil && p.Status.Phase != corev1.PodSucceeded &&
		p.Status.Phase != corev1.PodFailed &&
		p.DeletionTimestamp == nil
}

// IsPodTerminating reports whether p is being deleted but has not reached a
// terminal phase (upstream controller.IsPodTerminating). A nil pod is not.
func IsPodTerminating(p *corev1.Pod) bool {
	return p != nil && p.Status.Phase != corev1.PodSucceeded &&
		p.Status.Phase != corev1.PodFailed &&
		p.DeletionTimestamp != nil
}

// readyCondition returns the first Ready condition of p, or nil (also for
// a nil p).
func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	if p == nil {
		return nil
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether the first Ready condition of p is True
// (upstream podutil.IsPodReady). A nil pod is not ready.
func IsPodReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsPodAvailable reports whether p is ready and has been for at least
// minReadySeconds at now. The boundary is inclusive: a pod that became ready
// exactly minReadySeconds ago is available. A ready pod without a transition
// time is available only when minReadySeconds is 0 (upstream
// podutil.IsPodAvailable). A nil pod is not available.
func IsPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue && availableSince(c, minReadySeconds, now)
}

// availableSince reports whether a pod whose Ready condition c is True has
// been ready for minReadySeconds at now.
func availableSince(c *corev1.PodCondition, minReadySeconds int32, now time.Time) bool {
	return readyFor(c.LastTransitionTime.Time, minReadySeconds, now)
}

// readyFor is availableSince for a pod ready since lt.
func readyFor(lt time.Time, minReadySeconds int32, now time.Time) bool {
	if minReadySeconds == 0 {
		return true
	}
	return !lt.IsZero() && !lt.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// replicas returns spec.replicas, with the API default of 1 for nil (the
// rule of the whole library: rollout.DefaultReplicas; replicaset does not
// import rollout).
func replicas(rs *appsv1.ReplicaSet) int {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return int(*rs.Spec.Replicas)
}

// newControllerRef returns the controller reference pods of rs carry:
// apps/v1 ReplicaSet, controller=true, blockOwnerDeletion=true (upstream
// metav1.NewControllerRef with the ReplicaSet kind). Nil for a nil rs.
func newControllerRef(rs *appsv1.ReplicaSet) *metav1.OwnerReference {
	if rs == nil {
		return nil
	}
	return metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind(controllerKindName))
}

// NewPod returns the pod rs creates from its template, in rs's namespace:
// generateName "<rs-name>-" (or "<rs-name>" when the dash would make the
// prefix invalid), the template's labels, annotations and finalizers, a deep
// copy of its spec, and rs's controller reference. It returns [ErrNoLabels]
// when the template has no labels. rs is not modified (upstream
// controller.GetPodFromTemplate plus the label check of RealPodControl).
// A nil rs is an error.
func NewPod(rs *appsv1.ReplicaSet) (*corev1.Pod, error) {
	if err := checkRS("NewPod", rs); err != nil {
		return nil, err
	}
	tpl := &rs.Spec.Template
	if len(tpl.Labels) == 0 {
		return nil, ErrNoLabels
	}
	prefix := rs.Name + "-"
	if len(validation.NameIsDNSSubdomain(prefix, true)) != 0 {
		prefix = rs.Name
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       rs.Namespace,
			GenerateName:    prefix,
			Labels:          make(map[string]string, len(tpl.Labels)),
			Annotations:     make(map[string]string, len(tpl.Annotations)),
			Finalizers:      append([]string{}, tpl.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{*newControllerRef(rs)},
		},
		Spec: *tpl.Spec.DeepCopy(),
	}
	for k, v := range tpl.Labels {
		pod.Labels[k] = v
	}
	for k, v := range tpl.Annotations {
		pod.Annotations[k] = v
	}
	return pod, nil
}
