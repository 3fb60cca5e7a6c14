package memcluster

import (
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// PodDisruptionBudgets (policy/v1) have kube-apiserver's strategy: the
// status is reset on create and kept by updates, which must carry a
// resourceVersion; spec changes bump the generation; the spec is
// validated as kube-apiserver does. Their status is computed by the
// disruption controller of kube-controller-manager, run synchronously
// (see react.go) after every write of a pod or a budget in the namespace:
// expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed,
// disruptedPods, observedGeneration and the DisruptionAllowed condition.
//
// Unlike upstream, the controller does not recheck on a timer: an entry of
// disruptedPods whose pod was not deleted within two minutes is dropped at
// the next write in the namespace rather than at the two minutes, and the
// DisruptionTarget condition of such a pod is not reset. A pod matched by
// several budgets updates all of them (upstream picks one).

// deletionTimeout is how long the controller waits for an evicted pod to
// go before counting it again (the disruption controller's
// DeletionTimeout).
const deletionTimeout = 2 * time.Minute

var pdbGK = schema.GroupKind{Group: policyv1.GroupName, Kind: "PodDisruptionBudget"}

func pdbKind() Kind[*policyv1.PodDisruptionBudget] {
	return Kind[*policyv1.PodDisruptionBudget]{
		GVK:        policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
		Resource:   "poddisruptionbudgets",
		New:        func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} },
		NewList:    func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		Generation: func(p *policyv1.PodDisruptionBudget) any { return p.Spec },
		CopyStatus: func(dst, src *policyv1.PodDisruptionBudget) { dst.Status = *src.Status.DeepCopy() },
		// poddisruptionbudgets/status keeps the spec; the metadata goes
		// through.
		StatusMeta: func(dst, src *policyv1.PodDisruptionBudget) {
			dst.Labels, dst.Annotations = maps.Clone(src.Labels), maps.Clone(src.Annotations)
			dst.Finalizers, dst.OwnerReferences = slices.Clone(src.Finalizers), slices.Clone(src.OwnerReferences)
		},
		PrepareCreate:          func(p *policyv1.PodDisruptionBudget) { p.Status = policyv1.PodDisruptionBudgetStatus{} },
		RequireResourceVersion: true,
		Validate:               validatePDB,
	}
}

func validatePDB(p, old *policyv1.PodDisruptionBudget) field.ErrorList {
	var errs field.ErrorList
	s, path := p.Spec, field.NewPath("spec")
	if s.MinAvailable != nil && s.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(path, s, "minAvailable and maxUnavailable cannot be both set"))
	}
	for _, f := range []struct {
		v    *intstr.IntOrString
		name string
	}{{s.MinAvailable, "minAvailable"}, {s.MaxUnavailable, "maxUnavailable"}} {
		if f.v == nil {
			continue
		}
		errs = append(errs, intOrPercent(*f.v, path.Child(f.name))...)
		if n, ok := percentValue(*f.v); ok && n > 100 {
			errs = append(errs, field.Invalid(path.Child(f.name), *f.v, "must not be greater than 100%"))
		}
	}
	// An update keeps a selector that was accepted before with invalid
	// label values, as kube-apiserver does.
	opts := metav1validation.LabelSelectorValidationOptions{}
	if old != nil && old.Spec.Selector != nil {
		opts.AllowInvalidLabelValueInSelector = len(metav1validation.ValidateLabelSelector(old.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, opts, path.Child("selector"))...)
	if pol := s.UnhealthyPodEvictionPolicy; pol != nil && *pol != policyv1.IfHealthyBudget && *pol != policyv1.AlwaysAllow {
		errs = append(errs, field.NotSupported(path.Child("unhealthyPodEvictionPolicy"), *pol, []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}))
	}
	return errs
}

// pdbStoreLocked returns the cluster's PodDisruptionBudgets, if it
// stores them.
func (c *Cluster) pdbStoreLocked() *Resource[*policyv1.PodDisruptionBudget] {
	r, _ := c.kinds[pdbGK].(*Resource[*policyv1.PodDisruptionBudget])
	return r
}

// disruptionObserveLocked has the budgets of a namespace synced after a
// write of one of its pods or budgets.
func (c *Cluster) disruptionObserveLocked(ref objRef, obj Object) {
	if c.cfg.NoDisruptionController || ref.key.Namespace == "" {
		return
	}
	switch ref.gk {
	case pdbGK:
	case schema.GroupKind{Kind: "Pod"}:
		if !c.hasBudgetsLocked(ref.key.Namespace) {
			return
		}
	default:
		return
	}
	c.enqueueLocked(task{kind: taskDisruption, name: ref.key.Namespace})
}

// hasBudgetsLocked reports whether namespace ns has a budget.
func (c *Cluster) hasBudgetsLocked(ns string) bool {
	pdbs := c.pdbStoreLocked()
	if pdbs == nil {
		return false
	}
	for key := range pdbs.objs {
		if key.Namespace == ns {
			return true
		}
	}
	return false
}

// syncDisruptionLocked syncs every budget of a namespace.
func (c *Cluster) syncDisruptionLocked(ns string) {
	pdbs := c.pdbStoreLocked()
	if pdbs == nil {
		return
	}
	now := c.now()
	for _, key := range pdbs.keysInLocked(ns) {
		pdb := pdbs.objs[key]
		var pods []*corev1.Pod
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil {
			pods = c.podsMatchingLocked(ns, sel)
		}
		var status policyv1.PodDisruptionBudgetStatus
		changed := false
		if err == nil {
			status, changed, err = disruptionStatus(pdb, pods, c.controllerScaleLocked, now.Time)
		}
		if err != nil {
			status, changed = failSafeStatus(pdb, err, now), true
		}
		if !changed {
			continue
		}
		next := pdb.DeepCopy()
		next.Status = status
		if semanticallyEqual(pdb, next) {
			continue
		}
		pdbs.recordUpdateLocked(pdb, next, author{manager: controllerManager, statusOnly: true}, "status") // the controller's UpdateStatus
		pdbs.commitLocked(watch.Modified, next)
	}
}

func (c *Cluster) podsMatchingLocked(ns string, sel labels.Selector) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, key := range c.pods.keysInLocked(ns) {
		if p := c.pods.objs[key]; sel.Matches(labels.Set(p.Labels)) {
			pods = append(pods, p)
		}
	}
	return pods
}

// scaleFunc finds the controller of a pod from its controller reference:
// its UID and desired replicas, or found false.
type scaleFunc func(ref metav1.OwnerReference, ns string) (uid types.UID, replicas int32, found bool, err error)

// disruptionStatus is the disruption controller's sync of pdb over the
// pods its selector matches (never modified), at now. It returns the new
// status and whether it differs from the stored one, or the error that
// makes the controller fail safe.
func disruptionStatus(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, scale scaleFunc, now time.Time) (policyv1.PodDisruptionBudgetStatus, bool, error) {
	expected, desired, err := expectedPods(pdb, pods, scale)
	if err != nil {
		return policyv1.PodDisruptionBudgetStatus{}, false, err
	}
	disrupted := map[string]metav1.Time{}
	for _, p := range pods {
		t, ok := pdb.Status.DisruptedPods[p.Name]
		if p.DeletionTimestamp != nil || !ok || t.Add(deletionTimeout).Before(now) {
			continue
		}
		disrupted[p.Name] = t
	}
	var healthy int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if t, ok := disrupted[p.Name]; ok && t.Add(deletionTimeout).After(now) {
			continue
		}
		if podReady(p) {
			healthy++
		}
	}
	allowed := healthy - desired
	if expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	st := pdb.Status
	if st.CurrentHealthy == healthy && st.DesiredHealthy == desired && st.ExpectedPods == expected &&
		st.DisruptionsAllowed == allowed && apiequality.Semantic.DeepEqual(st.DisruptedPods, disrupted) &&
		st.ObservedGeneration == pdb.Generation && conditionUpToDate(pdb) {
		return st, false, nil
	}
	if len(disrupted) == 0 {
		disrupted = nil
	}
	next := policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: expected, DisruptionsAllowed: allowed,
		DisruptedPods: disrupted, ObservedGeneration: pdb.Generation,
		Conditions: slices.Clone(pdb.Status.Conditions),
	}
	setDisruptionAllowed(&next, metav1.NewTime(now))
	return next, true, nil
}

// expectedPods is the controller's expected count of pods and desired
// healthy count.
func expectedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, scale scaleFunc) (expected, desired int32, err error) {
	switch s := pdb.Spec; {
	case s.MaxUnavailable != nil:
		if expected, err = expectedScale(pods, scale); err != nil {
			return 0, 0, err
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(s.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, max(expected-int32(n), 0), nil
	case s.MinAvailable != nil && s.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), s.MinAvailable.IntVal, nil
	case s.MinAvailable != nil:
		if expected, err = expectedScale(pods, scale); err != nil {
			return 0, 0, err
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(s.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, int32(n), nil
	}
	return 0, 0, nil
}

// expectedScale sums the desired replicas of the controllers of pods;
// pods without a controller are left out.
func expectedScale(pods []*corev1.Pod, scale scaleFunc) (int32, error) {
	seen := map[types.UID]int32{}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			continue
		}
		if _, ok := seen[ref.UID]; ok {
			continue
		}
		uid, n, found, err := scale(*ref, p.Namespace)
		if err != nil {
			return 0, err
		}
		if !found {
			return 0, fmt.Errorf("found no controllers for pod %q", p.Name)
		}
		seen[uid] = n
	}
	var sum int32
	for _, n := range seen {
		sum += n
	}
	return sum, nil
}

// failSafeStatus is the status the controller writes when a sync fails:
// no disruption allowed, and the reason.
func failSafeStatus(pdb *policyv1.PodDisruptionBudget, err error, now metav1.Time) policyv1.PodDisruptionBudgetStatus {
	st := *pdb.Status.DeepCopy()
	st.DisruptionsAllowed = 0
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.SyncFailedReason,
		Message: err.Error(), ObservedGeneration: st.ObservedGeneration, LastTransitionTime: now,
	})
	return st
}

// setDisruptionAllowed sets the DisruptionAllowed condition from
// DisruptionsAllowed.
func setDisruptionAllowed(st *policyv1.PodDisruptionBudgetStatus, now metav1.Time) {
	c := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: policyv1.InsufficientPodsReason, ObservedGeneration: st.ObservedGeneration, LastTransitionTime: now}
	if st.DisruptionsAllowed > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	}
	apimeta.SetStatusCondition(&st.Conditions, c)
}

func conditionUpToDate(pdb *policyv1.PodDisruptionBudget) bool {
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil || pdb.Status.ObservedGeneration != pdb.Generation {
		return false
	}
	if pdb.Status.DisruptionsAllowed > 0 {
		return c.Status == metav1.ConditionTrue && c.Reason == policyv1.SufficientPodsReason
	}
	return c.Status == metav1.ConditionFalse && c.Reason == policyv1.InsufficientPodsReason
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// controllerScaleLocked finds a pod's controller as the disruption
// controller's finders do, in their order: a ReplicationController, a
// Deployment through its ReplicaSet, a ReplicaSet not controlled by a
// Deployment, a StatefulSet, and any kind with a scale subresource.
func (c *Cluster) controllerScaleLocked(ref metav1.OwnerReference, ns string) (types.UID, int32, bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, err
	}
	get := func(gk schema.GroupKind, name string) (Object, bool) {
		k, ok := c.kinds[gk]
		if !ok {
			return nil, false
		}
		return k.objectLocked(types.NamespacedName{Namespace: ns, Name: name})
	}
	rsGroup := gv.Group == "apps" || gv.Group == "extensions"
	switch {
	case gv.Group == "" && ref.Kind == "ReplicationController":
		if o, ok := get(schema.GroupKind{Kind: ref.Kind}, ref.Name); ok && o.GetUID() == ref.UID {
			if rc, ok := o.(*corev1.ReplicationController); ok {
				return rc.UID, replicasOr1(rc.Spec.Replicas), true, nil
			}
		}
	case rsGroup && ref.Kind == "ReplicaSet":
		o, ok := get(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, ref.Name)
		rs, isRS := o.(*appsv1.ReplicaSet)
		if !ok || !isRS || rs.UID != ref.UID {
			break
		}
		dref := metav1.GetControllerOf(rs)
		if dref != nil {
			dgv, err := schema.ParseGroupVersion(dref.APIVersion)
			if err != nil {
				return "", 0, false, err
			}
			if dref.Kind == "Deployment" && (dgv.Group == "apps" || dgv.Group == "extensions") {
				if o, ok := get(schema.GroupKind{Group: "apps", Kind: "Deployment"}, dref.Name); ok && o.GetUID() == dref.UID {
					if d, ok := o.(*appsv1.Deployment); ok {
						return d.UID, replicasOr1(d.Spec.Replicas), true, nil
					}
				}
			}
		}
		if dref == nil || dref.Kind != "Deployment" {
			return rs.UID, replicasOr1(rs.Spec.Replicas), true, nil
		}
	case gv.Group == "apps" && ref.Kind == "StatefulSet":
		if o, ok := get(schema.GroupKind{Group: "apps", Kind: ref.Kind}, ref.Name); ok && o.GetUID() == ref.UID {
			if ss, ok := o.(*appsv1.StatefulSet); ok {
				return ss.UID, replicasOr1(ss.Spec.Replicas), true, nil
			}
		}
	}
	// Any kind with a scale subresource.
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	k, ok := c.kinds[gk]
	if !ok {
		return "", 0, false, &apimeta.NoKindMatchError{GroupKind: gk, SearchedVersions: []string{gv.Version}}
	}
	if !scaleKind(k.kindGVK()) {
		return "", 0, false, fmt.Errorf("%s does not implement the scale subresource", schema.GroupResource{Group: gk.Group, Resource: c.resourceOfLocked(k)})
	}
	o, ok := get(gk, ref.Name)
	if !ok || o.GetUID() != ref.UID {
		return "", 0, false, nil
	}
	sc := scaleOf(o)
	if sc == nil {
		return "", 0, false, nil
	}
	return o.GetUID(), sc.Spec.Replicas, true, nil
}

func replicasOr1(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
