package memcluster

import (
	"github.com/ctrlkit/ctrlkit/internal/gate"

	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// maxDisruptedPods is the size of a budget's disruptedPods beyond which
// evictions are refused (kube-apiserver's MaxDisruptedPodSize).
const maxDisruptedPods = 2000

// Evict evicts a pod as POST pods/<name>/eviction does (a policy/v1
// Eviction naming the pod, in namespace "default" if it has none;
// ev.DeleteOptions are the options of the pod's deletion):
//
//   - A pod that is Pending, Succeeded or Failed, or already being
//     deleted, is deleted without looking at budgets.
//   - Otherwise the PodDisruptionBudgets of its namespace whose selector
//     matches it decide. None: the pod is deleted. More than one: nothing
//     happens, and the answer is kube-apiserver's, a failure with code 500
//     ("This pod has more than one PodDisruptionBudget, ..."), returned
//     here as an error (a REST client gets it as the body of a 201, as
//     from kube-apiserver). One: if the budget's status is not up to date
//     (observedGeneration behind) or allows no disruption, the eviction is
//     refused with 429 TooManyRequests and a DisruptionBudget cause saying
//     why; otherwise disruptionsAllowed is decremented, the pod recorded
//     in disruptedPods and deleted. A pod that is not ready is deleted
//     without spending the budget if the budget's unhealthyPodEvictionPolicy
//     is AlwaysAllow, or (IfHealthyBudget, the default) if the budget is
//     met.
//   - Before the deletion the pod gets the DisruptionTarget condition
//     (reason EvictionByEvictionAPI).
//   - Creating an eviction in a namespace being deleted is Forbidden, as
//     any create is.
func (c *Cluster) Evict(ctx context.Context, ev *policyv1.Eviction) error {
	if ev == nil {
		return apierrors.NewBadRequest("memcluster: eviction of a nil Eviction")
	}
	ns := ev.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	_, err := c.evict(ctx, ns, ev.Name, ev)
	return err
}

// evict is the eviction subresource of the pod ns/name: a success Status,
// or the error kube-apiserver answers.
func (c *Cluster) evict(ctx context.Context, ns, name string, ev *policyv1.Eviction) (*metav1.Status, error) {
	if name != ev.Name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if ev.Namespace != "" && ev.Namespace != ns {
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	opts := ev.DeleteOptions
	if opts != nil && opts.IgnoreStoreReadErrorWithClusterBreakingPotential != nil && *opts.IgnoreStoreReadErrorWithClusterBreakingPotential {
		return nil, apierrors.NewInvalid(policyv1.SchemeGroupVersion.WithKind("Eviction").GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions").Child("ignoreStoreReadErrorWithClusterBreakingPotential"), true, "can not be set for pod eviction, try after removing the option"),
		})
	}
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	} else {
		opts = opts.DeepCopy()
	}
	if len(opts.DryRun) > 0 {
		return nil, apierrors.NewBadRequest("memcluster does not support dryRun")
	}
	after, err := c.admit(ctx, gate.VerbCreate, schema.GroupResource{Resource: "pods/eviction"}, ns, name)
	if err != nil {
		return nil, err
	}
	if c.admitting() {
		admitted, err := c.evictionAdmitted(ctx, ns, name, ev)
		if err != nil {
			return nil, err
		}
		if admitted.DeleteOptions != nil {
			opts = admitted.DeleteOptions.DeepCopy() // as the mutating stage left them
		}
	}
	c.mu.Lock()
	c.holdLocked()
	st, err := c.evictLocked(types.NamespacedName{Namespace: ns, Name: name}, *opts)
	c.releaseLocked()
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if after != nil {
		return nil, after
	}
	return st, nil
}

func (c *Cluster) evictLocked(key types.NamespacedName, opts metav1.DeleteOptions) (*metav1.Status, error) {
	pods := c.pods.kind.groupResource()
	// NamespaceLifecycle admission: an eviction is a create.
	if err := c.admitNamespaceLocked(pods, &metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}); err != nil {
		return nil, err
	}
	pod, ok := c.pods.objs[key]
	if !ok {
		return nil, apierrors.NewNotFound(pods, key.Name)
	}
	rvSet := opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil
	success := &metav1.Status{Status: metav1.StatusSuccess}
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if terminal || pod.Status.Phase == corev1.PodPending || pod.DeletionTimestamp != nil {
		// The budget can be ignored: the pod disrupts nothing more.
		if !terminal && pod.DeletionTimestamp == nil && !rvSet {
			setPreconditionRV(&opts, pod.ResourceVersion) // do not race a pod turning ready
		}
		if err := c.markAndDeletePodLocked(key, opts); err != nil {
			return nil, err
		}
		return success, nil
	}
	pdbs := c.budgetsForLocked(pod)
	if len(pdbs) > 1 {
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}
	}
	unhealthyOK := false
	if len(pdbs) == 1 {
		pdb := pdbs[0]
		if !podReady(pod) {
			p := pdb.Spec.UnhealthyPodEvictionPolicy
			unhealthyOK = p != nil && *p == policyv1.AlwaysAllow ||
				pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
		}
		if !unhealthyOK {
			if err := c.spendBudgetLocked(pdb, pod.Name); err != nil {
				return nil, err
			}
		}
	}
	if unhealthyOK && !rvSet {
		setPreconditionRV(&opts, pod.ResourceVersion) // the pod must still be unready
	}
	if err := c.markAndDeletePodLocked(key, opts); err != nil {
		if apierrors.IsConflict(err) && unhealthyOK && !rvSet {
			return nil, budgetBusy(pdbs[0].Name)
		}
		return nil, err
	}
	return success, nil
}

func setPreconditionRV(opts *metav1.DeleteOptions, rv string) {
	if opts.Preconditions == nil {
		opts.Preconditions = &metav1.Preconditions{}
	}
	opts.Preconditions.ResourceVersion = &rv
}

// budgetsForLocked returns the budgets of pod's namespace that select it.
func (c *Cluster) budgetsForLocked(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	store := c.pdbStoreLocked()
	if store == nil {
		return nil
	}
	var out []*policyv1.PodDisruptionBudget
	for _, key := range store.keysInLocked(pod.Namespace) {
		pdb := store.objs[key]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue // an invalid selector matches nothing
		}
		out = append(out, pdb)
	}
	return out
}

// budgetBusy is the 429 of a budget the eviction cannot use yet.
func budgetBusy(name string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name)})
	return err
}

// spendBudgetLocked checks that pdb allows one more disruption and
// records it: disruptionsAllowed decremented, the pod in disruptedPods.
func (c *Cluster) spendBudgetLocked(pdb *policyv1.PodDisruptionBudget, pod string) error {
	forbidden := func(err, why string) error {
		e := apierrors.NewForbidden(schema.GroupResource{Group: policyv1.GroupName, Resource: "poddisruptionbudget"}, pdb.Name, errors.New(err))
		e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", pdb.Name, why)})
		return e
	}
	st := pdb.Status
	switch {
	case st.ObservedGeneration < pdb.Generation:
		return budgetBusy(pdb.Name)
	case st.DisruptionsAllowed < 0:
		return forbidden("pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
	case len(st.DisruptedPods) > maxDisruptedPods:
		return forbidden("DisruptedPods map too big - too many evictions not confirmed by PDB controller", "too many pending evictions not confirmed by PDB controller")
	case st.DisruptionsAllowed == 0:
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		cond := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
		var msg string
		switch {
		case cond != nil && cond.Status == metav1.ConditionFalse && cond.Message != "" && cond.Reason == policyv1.SyncFailedReason:
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, cond.Message)
		case st.CurrentHealthy <= st.DesiredHealthy:
			msg = fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, st.DesiredHealthy, st.CurrentHealthy)
		case cond != nil && cond.Status == metav1.ConditionFalse && cond.Message != "":
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, cond.Reason, cond.Message)
		default:
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
		}
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: msg})
		return err
	}
	next := pdb.DeepCopy()
	next.Status.DisruptionsAllowed--
	now := c.now()
	if next.Status.DisruptionsAllowed == 0 {
		setDisruptionAllowed(&next.Status, now)
	}
	if next.Status.DisruptedPods == nil {
		next.Status.DisruptedPods = map[string]metav1.Time{}
	}
	next.Status.DisruptedPods[pod] = now
	pdbs := c.pdbStoreLocked()
	pdbs.recordUpdateLocked(pdb, next, author{manager: apiserverManager, statusOnly: true}, "status") // kube-apiserver's UpdateStatus through its loopback client
	pdbs.commitLocked(watch.Modified, next)
	return nil
}

// markAndDeletePodLocked gives the pod the DisruptionTarget condition,
// then deletes it with opts (whose resourceVersion precondition, if any,
// is checked first and then follows the condition's write).
func (c *Cluster) markAndDeletePodLocked(key types.NamespacedName, opts metav1.DeleteOptions) error {
	r := c.pods
	pod, ok := r.objs[key]
	if !ok {
		return apierrors.NewNotFound(r.kind.groupResource(), key.Name)
	}
	gr := schema.GroupResource{Resource: "Pod"}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != "" && *p.UID != pod.UID {
			return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, pod.UID))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion {
			return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, pod.ResourceVersion))
		}
	}
	next := pod.DeepCopy()
	if setPodCondition(&next.Status, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}, c.now()) {
		stored := r.commitLocked(watch.Modified, next)
		if opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
			rv := stored.ResourceVersion
			opts.Preconditions.ResourceVersion = &rv
		}
	}
	_, _, err := r.deleteLocked(key, opts)
	return err
}

// setPodCondition is podutil.UpdatePodCondition: it adds or updates cond
// (its lastTransitionTime is now if the status changes) and reports
// whether anything changed.
func setPodCondition(st *corev1.PodStatus, cond corev1.PodCondition, now metav1.Time) bool {
	cond.LastTransitionTime = now
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		cond.ObservedGeneration = old.ObservedGeneration // pods/status keeps it when a write leaves it out
		if old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message &&
			old.LastProbeTime.Equal(&cond.LastProbeTime) && old.LastTransitionTime.Equal(&cond.LastTransitionTime) {
			return false
		}
		*old = cond
		return true
	}
	st.Conditions = append(st.Conditions, cond)
	return true
}

// evictionCodecs decode the body of an eviction: a policy/v1 or
// policy/v1beta1 Eviction, in JSON, YAML or protobuf.
var evictionCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	for _, gv := range []schema.GroupVersion{policyv1.SchemeGroupVersion, policyv1beta1.SchemeGroupVersion} {
		metav1.AddToGroupVersion(s, gv)
	}
	s.AddKnownTypes(policyv1.SchemeGroupVersion, &policyv1.Eviction{})
	s.AddKnownTypes(policyv1beta1.SchemeGroupVersion, &policyv1beta1.Eviction{})
	return serializer.NewCodecFactory(s)
}()

// serveEviction serves POST pods/<name>/eviction.
func (a *api) serveEviction(w http.ResponseWriter, r *http.Request, rq request) {
	rep, err := a.negotiate(r.Header.Get("Accept"), false, true)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, a, rep, methodNotAllowed(r.Method, r.URL.Path))
		return
	}
	ev, err := readEviction(r)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	st, err := a.c.evict(r.Context(), rq.namespace, rq.name, ev)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	st.Code = http.StatusCreated
	a.writeObject(w, rep, restInfo{gvk: schema.GroupVersionKind{Version: "v1"}}, http.StatusCreated, st)
}

// readEviction decodes the body of an eviction request.
func readEviction(r *http.Request) (*policyv1.Eviction, error) {
	if err := unsupportedOptions(r.URL.Query()); err != nil {
		return nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	mt := mediaJSON
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			mt = ct
		}
	}
	info, ok := runtime.SerializerInfoForMediaType(evictionCodecs.SupportedMediaTypes(), mt)
	if !ok {
		return nil, unsupportedMediaType(mt, []string{mediaJSON, "application/yaml", runtime.ContentTypeProtobuf})
	}
	want := policyv1.SchemeGroupVersion.WithKind("Eviction")
	obj, gvk, err := info.Serializer.Decode(body, &want, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as Eviction: %v", err))
	}
	switch e := obj.(type) {
	case *policyv1.Eviction:
		return e, nil
	case *policyv1beta1.Eviction:
		return &policyv1.Eviction{ObjectMeta: e.ObjectMeta, DeleteOptions: e.DeleteOptions}, nil
	}
	return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), want.GroupVersion()))
}
