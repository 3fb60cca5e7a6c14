package memcluster

import (
	"github.com/ctrlkit/ctrlkit/internal/gate"

	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// Namespaces follow kube-apiserver and kube-controller-manager:
//
//   - On create, status.phase is Active, spec.finalizers gets
//     "kubernetes", and the label kubernetes.io/metadata.name is the name.
//     Updates keep spec.finalizers and the status; namespaces/status keeps
//     the spec; namespaces/finalize ([Cluster.FinalizeNamespace]) writes
//     spec.finalizers and keeps the status.
//   - The first Delete sets the deletionTimestamp and phase Terminating
//     (and the orphan or foregroundDeletion finalizer the request asks
//     for). Creating anything in a Terminating namespace is Forbidden,
//     with the NamespaceTerminating cause (NamespaceLifecycle admission).
//   - The namespace controller then deletes the namespace's content, pods
//     first, each kind in the Background, and keeps the namespace's
//     deletion conditions up to date (NamespaceDeletionDiscoveryFailure,
//     NamespaceDeletionGroupVersionParsingFailure,
//     NamespaceDeletionContentFailure, NamespaceContentRemaining,
//     NamespaceFinalizersRemaining, with the controller's reasons and
//     messages). Once nothing is left it removes "kubernetes" from
//     spec.finalizers, and the namespace leaves storage with its last
//     finalizer.
//   - With Config.RequireNamespaces, creating an object in a namespace
//     that does not exist is NotFound, as kube-apiserver answers it.
//
// Unlike upstream, the controller syncs when something in the namespace is
// written or removed rather than on a timer: a pod still terminating past
// its grace period does not make it report NamespaceDeletionContentFailure.

// The namespaces a real cluster starts with.
var initialNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// immortalNamespace reports the namespaces NamespaceLifecycle admission
// never lets go.
func immortalNamespace(name string) bool {
	return name == metav1.NamespaceDefault || name == metav1.NamespaceSystem || name == metav1.NamespacePublic
}

var namespaceGK = schema.GroupKind{Kind: "Namespace"}

// okConditions are the namespace controller's conditions when all is well,
// in the order it writes them: reason and message.
var okConditions = []struct {
	typ             corev1.NamespaceConditionType
	reason, message string
}{
	{corev1.NamespaceDeletionDiscoveryFailure, "ResourcesDiscovered", "All resources successfully discovered"},
	{corev1.NamespaceDeletionGVParsingFailure, "ParsedGroupVersions", "All legacy kube types successfully parsed"},
	{corev1.NamespaceDeletionContentFailure, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	{corev1.NamespaceContentRemaining, "ContentRemoved", "All content successfully removed"},
	{corev1.NamespaceFinalizersRemaining, "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

func namespaceKind() Kind[*corev1.Namespace] {
	return Kind[*corev1.Namespace]{
		GVK:           corev1.SchemeGroupVersion.WithKind("Namespace"),
		Resource:      "namespaces",
		ClusterScoped: true,
		ShortNames:    []string{"ns"},
		New:           func() *corev1.Namespace { return &corev1.Namespace{} },
		NewList:       func() runtime.Object { return &corev1.NamespaceList{} },
		CopyStatus:    func(dst, src *corev1.Namespace) { dst.Status = *src.Status.DeepCopy() },
		// namespaces/status keeps the spec, and the metadata goes through.
		StatusMeta: func(dst, src *corev1.Namespace) {
			dst.Labels, dst.Annotations = maps.Clone(src.Labels), maps.Clone(src.Annotations)
			dst.Finalizers, dst.OwnerReferences = slices.Clone(src.Finalizers), slices.Clone(src.OwnerReferences)
			defaultNamespace(dst)
		},
		PrepareCreate: func(n *corev1.Namespace) {
			n.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
			if !slices.Contains(n.Spec.Finalizers, corev1.FinalizerKubernetes) {
				n.Spec.Finalizers = append(n.Spec.Finalizers, corev1.FinalizerKubernetes)
			}
		},
		PrepareUpdate: func(n, old *corev1.Namespace) field.ErrorList {
			n.Spec.Finalizers = slices.Clone(old.Spec.Finalizers)
			return nil
		},
		Default:  defaultNamespace,
		Validate: validateNamespace,
	}
}

// defaultNamespace sets the label that names the namespace.
func defaultNamespace(n *corev1.Namespace) {
	if n.Name == "" {
		return
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[corev1.LabelMetadataName] = n.Name
}

func validateNamespace(n, old *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	// Metadata is validated as for every kind, with DNS subdomain names;
	// a namespace's must also be a DNS label.
	if len(apivalidation.NameIsDNSSubdomain(n.Name, false)) == 0 {
		for _, msg := range apivalidation.ValidateNamespaceName(n.Name, false) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), n.Name, msg))
		}
	}
	return append(errs, validateNamespaceFinalizers(n.Spec.Finalizers, false)...)
}

// validateNamespaceFinalizers checks spec.finalizers: qualified names, or
// one of the standard ones. indexed gives each error its index, as
// namespaces/finalize does.
func validateNamespaceFinalizers(fins []corev1.FinalizerName, indexed bool) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "finalizers")
	for i, f := range fins {
		p := path
		if indexed {
			p = path.Index(i)
		}
		s := string(f)
		errs = append(errs, apivalidation.ValidateFinalizerName(s, p)...)
		if !strings.Contains(s, "/") && s != string(corev1.FinalizerKubernetes) &&
			s != metav1.FinalizerOrphanDependents && s != metav1.FinalizerDeleteDependents {
			errs = append(errs, field.Invalid(p, s, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

// createInitialNamespaces creates the namespaces a real cluster starts with.
func (c *Cluster) createInitialNamespaces() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range initialNamespaces {
		// kube-apiserver creates them itself, through its loopback client.
		if _, err := c.namespaces.createLocked(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, "", author{manager: apiserverManager}); err != nil {
			panic("memcluster: creating namespace " + name + ": " + err.Error()) // valid, and the cluster is empty
		}
	}
}

// admitNamespaceLocked is NamespaceLifecycle admission for the create of
// obj, a namespaced object whose namespace is set: the namespace must
// exist (with Config.RequireNamespaces) and not be terminating.
func (c *Cluster) admitNamespaceLocked(gr schema.GroupResource, obj metav1.Object) error {
	ns, ok := c.namespaces.objs[types.NamespacedName{Name: obj.GetNamespace()}]
	switch {
	case !ok && c.cfg.RequireNamespaces:
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, obj.GetNamespace())
	case !ok || ns.Status.Phase != corev1.NamespaceTerminating:
		return nil
	}
	name := obj.GetName()
	if name == "" {
		name = obj.GetGenerateName()
	}
	if name == "" {
		name = "Unknown"
	}
	return namespaceTerminating(gr, name, obj.GetNamespace())
}

// namespaceTerminating is NamespaceLifecycle's refusal of a create.
func namespaceTerminating(gr schema.GroupResource, name, ns string) error {
	err := apierrors.NewForbidden(gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", ns),
		Field:   "metadata.namespace",
	})
	return err
}

// deleteNamespaceLocked is the namespace registry's Delete: the first one
// starts termination; once the namespace is finalized, it is deleted as
// any object is.
func (c *Cluster) deleteNamespaceLocked(key types.NamespacedName, opts metav1.DeleteOptions) (*corev1.Namespace, bool, error) {
	r := c.namespaces
	old := r.objs[key]
	gr := r.kind.groupResource()
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != old.UID {
			return nil, false, apierrors.NewConflict(gr, key.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, old.UID))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != old.ResourceVersion {
			return nil, false, apierrors.NewConflict(gr, key.Name,
				fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, old.ResourceVersion))
		}
	}
	if old.DeletionTimestamp == nil {
		next := old.DeepCopy()
		now := c.now()
		next.DeletionTimestamp = &now
		next.Status.Phase = corev1.NamespaceTerminating
		fins := slices.Clone(next.Finalizers)
		setFinalizer := func(f string, want bool) {
			has := slices.Contains(fins, f)
			switch {
			case want && !has:
				fins = append(fins, f)
			case !want && has:
				fins = slices.DeleteFunc(fins, func(x string) bool { return x == f })
			}
		}
		orphan, foreground := hasFinalizer(old, metav1.FinalizerOrphanDependents), hasFinalizer(old, metav1.FinalizerDeleteDependents)
		switch {
		case opts.OrphanDependents != nil: //nolint:staticcheck // the legacy option is still served
			orphan, foreground = *opts.OrphanDependents, !*opts.OrphanDependents //nolint:staticcheck // idem
		case opts.PropagationPolicy != nil:
			orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
			foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
		}
		setFinalizer(metav1.FinalizerOrphanDependents, orphan)
		setFinalizer(metav1.FinalizerDeleteDependents, foreground)
		if len(fins) == 0 {
			fins = nil
		}
		next.Finalizers = fins
		return r.commitLocked(watch.Modified, next), false, nil
	}
	if len(old.Spec.Finalizers) > 0 {
		return old, false, nil
	}
	return r.storeDeleteLocked(old, opts)
}

// finalizeNamespace writes a namespace's spec.finalizers (and metadata)
// as PUT namespaces/<name>/finalize does: the status is kept, and a
// namespace being deleted with no finalizer left leaves storage. The
// namespace controller calls it once the namespace is empty; with the
// controller off (see Config.NoNamespaceController), so can you. The
// field manager is opts.FieldManager, as for [Client.Update], recorded
// for the subresource "finalize".
func (c *Cluster) finalizeNamespace(ctx context.Context, ns *corev1.Namespace, opts metav1.UpdateOptions) (*corev1.Namespace, error) {
	if ns == nil {
		return nil, apierrors.NewBadRequest("memcluster: finalize of a nil namespace")
	}
	r := c.namespaces
	after, err := c.admit(ctx, gate.VerbUpdate, schema.GroupResource{Resource: "namespaces/finalize"}, "", ns.Name)
	if err != nil {
		return nil, err
	}
	in, err := r.roundTrip(ns)
	if err != nil {
		return nil, err
	}
	a := managerOf(opts.FieldManager)
	var out *corev1.Namespace
	if c.admitting() {
		out, err = r.Namespace("").replaceAdmitted(ctx, in, "finalize", opts, a.manager, func(in *corev1.Namespace) (*corev1.Namespace, error) {
			return c.finalizeNamespaceLocked(in, a)
		})
	} else {
		c.mu.Lock()
		out, err = c.finalizeNamespaceLocked(in, a)
		c.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	if after != nil {
		return nil, after
	}
	return out, nil
}

// finalizeNamespaceLocked is the namespaces/finalize update of in, a
// private round-tripped copy, by a.
func (c *Cluster) finalizeNamespaceLocked(in *corev1.Namespace, a author) (*corev1.Namespace, error) {
	r := c.namespaces
	old, err := r.checkPreconditionsLocked(in)
	if err != nil {
		return nil, err
	}
	in.UID, in.CreationTimestamp, in.Generation = old.UID, old.CreationTimestamp, old.Generation
	in.DeletionTimestamp, in.DeletionGracePeriodSeconds = old.DeletionTimestamp, old.DeletionGracePeriodSeconds
	in.ResourceVersion = old.ResourceVersion
	in.Status = *old.Status.DeepCopy()
	defaultNamespace(in)
	r.recordUpdateLocked(old, in, a, "finalize")
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(in, old, field.NewPath("metadata"))
	errs = append(errs, validateNamespaceFinalizers(in.Spec.Finalizers, true)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(r.kind.groupKind(), in.Name, errs)
	}
	if semanticallyEqual(old, in) {
		return old.DeepCopy(), nil
	}
	if r.finalizedLocked(in) {
		return r.removeLocked(in).DeepCopy(), nil
	}
	return r.commitLocked(watch.Modified, in).DeepCopy(), nil
}

// namespaceObserveLocked has the namespace controller sync a namespace
// being deleted, and any write in it.
func (c *Cluster) namespaceObserveLocked(ref objRef, typ watch.EventType, obj Object) {
	if c.cfg.NoGarbageCollection || c.cfg.NoNamespaceController {
		return
	}
	name := ref.key.Namespace
	if ref.gk == namespaceGK {
		if typ == watch.Deleted || !beingDeleted(obj) {
			return
		}
		name = ref.key.Name
	} else if name == "" {
		return
	} else if ns, ok := c.namespaces.objs[types.NamespacedName{Name: name}]; !ok || ns.DeletionTimestamp == nil {
		return
	}
	c.enqueueLocked(task{kind: taskNamespace, name: name})
}

// contentTotals counts what is left in a namespace being deleted.
type contentTotals struct {
	byResource  map[schema.GroupResource]int
	byFinalizer map[string]int
}

// syncNamespaceLocked is one sync of the namespace controller for a
// namespace being deleted: delete the content, update the conditions,
// finalize once nothing is left.
func (c *Cluster) syncNamespaceLocked(name string) {
	key := types.NamespacedName{Name: name}
	ns, ok := c.namespaces.objs[key]
	if !ok || ns.DeletionTimestamp == nil || len(ns.Spec.Finalizers) == 0 {
		return
	}
	var failures []string
	totals := contentTotals{byResource: map[schema.GroupResource]int{}, byFinalizer: map[string]int{}}
	var estimate int64
	// Pods first: nothing else goes while a pod is left.
	est, failure := c.deleteContentLocked(c.pods, ns, &totals)
	estimate = max(estimate, est)
	if failure != "" {
		failures = append(failures, failure)
	}
	if totals.byResource[c.pods.kind.groupResource()] > 0 {
		c.setNamespaceConditionsLocked(key, failures, nil)
		return
	}
	for _, k := range c.order {
		if !k.namespaced() || k == collector(c.pods) {
			continue
		}
		est, failure := c.deleteContentLocked(k, ns, &totals)
		estimate = max(estimate, est)
		if failure != "" {
			failures = append(failures, failure)
		}
	}
	c.setNamespaceConditionsLocked(key, failures, &totals)
	if len(failures) > 0 || estimate > 0 {
		return
	}
	ns, ok = c.namespaces.objs[key]
	if !ok {
		return
	}
	next := ns.DeepCopy()
	var keep []string
	for _, f := range ns.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			keep = append(keep, string(f))
		}
	}
	sort.Strings(keep)
	keep = slices.Compact(keep)
	next.Spec.Finalizers = nil
	for _, f := range keep {
		next.Spec.Finalizers = append(next.Spec.Finalizers, corev1.FinalizerName(f))
	}
	// The controller's own finalize: valid, and at the stored version.
	if _, err := c.finalizeNamespaceLocked(next, author{manager: controllerManager}); err != nil {
		panic("memcluster: namespace controller: finalize: " + err.Error())
	}
}

// deleteContentLocked deletes the objects of one kind in a namespace being
// deleted, in the Background, and counts what is left. It returns the
// controller's estimate of the seconds left (the longest grace period of
// the pods still running, or 15 for content held by finalizers) and a
// failure, as the controller reports them.
func (c *Cluster) deleteContentLocked(k collector, ns *corev1.Namespace, totals *contentTotals) (int64, string) {
	var estimate int64
	isPods := k == collector(c.pods)
	if isPods {
		for _, key := range c.pods.keysInLocked(ns.Name) {
			p := c.pods.objs[key]
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
				estimate = max(estimate, *g)
			}
		}
		if c.clock.Now().Sub(ns.DeletionTimestamp.Time) >= time.Duration(estimate)*time.Second {
			estimate = 0
		}
	}
	bg := metav1.DeletePropagationBackground
	for _, key := range k.keysInLocked(ns.Name) {
		_ = k.deleteKeyLocked(key, metav1.DeleteOptions{PropagationPolicy: &bg}) // NotFound: already gone
	}
	left := k.keysInLocked(ns.Name)
	if len(left) == 0 {
		return 0, ""
	}
	gvk := k.kindGVK()
	gr := schema.GroupResource{Group: gvk.Group, Resource: c.resourceOfLocked(k)}
	totals.byResource[gr] += len(left)
	fins := 0
	for _, key := range left {
		if o, ok := k.objectLocked(key); ok {
			for _, f := range o.GetFinalizers() {
				totals.byFinalizer[f]++
				fins++
			}
		}
	}
	switch {
	case estimate != 0:
		return estimate, ""
	case fins > 0:
		return 15, ""
	}
	gvr := gvk.GroupVersion().WithResource(gr.Resource)
	return 0, fmt.Sprintf("unexpected items still remain in namespace: %s for gvr: %v", ns.Name, gvr)
}

// resourceOfLocked is the plural resource name of a kind.
func (c *Cluster) resourceOfLocked(k collector) string {
	if st, ok := k.(restStore); ok {
		return st.info().resource
	}
	return strings.ToLower(k.kindGVK().Kind) + "s"
}

// setNamespaceConditionsLocked writes the deletion conditions of a
// namespace: the failures (delete errors), and, if totals is set, what is
// left; every other condition is written in its "ok" form.
func (c *Cluster) setNamespaceConditionsLocked(key types.NamespacedName, failures []string, totals *contentTotals) {
	ns, ok := c.namespaces.objs[key]
	if !ok {
		return
	}
	type cond struct{ status, reason, message string }
	want := map[corev1.NamespaceConditionType]cond{}
	if len(failures) > 0 {
		msgs := slices.Sorted(slices.Values(failures))
		want[corev1.NamespaceDeletionContentFailure] = cond{"True", "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", "))}
	}
	if totals != nil && len(totals.byResource) > 0 {
		var parts []string
		for gr, n := range totals.byResource {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gr.Resource, gr.Group, n))
			}
		}
		sort.Strings(parts)
		want[corev1.NamespaceContentRemaining] = cond{"True", "SomeResourcesRemain", "Some resources are remaining: " + strings.Join(parts, ", ")}
	}
	if totals != nil && len(totals.byFinalizer) > 0 {
		var parts []string
		for f, n := range totals.byFinalizer {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
			}
		}
		sort.Strings(parts)
		want[corev1.NamespaceFinalizersRemaining] = cond{"True", "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: " + strings.Join(parts, ", ")}
	}
	next := ns.DeepCopy()
	now := c.now()
	for _, ok := range okConditions {
		w, failing := want[ok.typ]
		if !failing {
			w = cond{"False", ok.reason, ok.message}
		}
		i := slices.IndexFunc(next.Status.Conditions, func(x corev1.NamespaceCondition) bool { return x.Type == ok.typ })
		if i < 0 {
			next.Status.Conditions = append(next.Status.Conditions, corev1.NamespaceCondition{
				Type: ok.typ, Status: corev1.ConditionStatus(w.status), LastTransitionTime: now, Reason: w.reason, Message: w.message})
			continue
		}
		cur := &next.Status.Conditions[i]
		if string(cur.Status) != w.status {
			cur.LastTransitionTime = now
		}
		cur.Status, cur.Reason, cur.Message = corev1.ConditionStatus(w.status), w.reason, w.message
	}
	if semanticallyEqual(ns, next) {
		return
	}
	c.namespaces.recordUpdateLocked(ns, next, author{manager: controllerManager, statusOnly: true}, "status") // the controller's UpdateStatus
	c.namespaces.commitLocked(watch.Modified, next)
}

// serveFinalize serves PUT namespaces/<name>/finalize.
func (a *api) serveFinalize(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	if r.Method != http.MethodPut {
		writeError(w, a, representation{}, methodNotAllowed(r.Method, r.URL.Path))
		return
	}
	rep, obj, err := a.readObject(r, s)
	if err == nil {
		err = checkNames(obj, rq)
	}
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	var opts metav1.UpdateOptions
	if err := a.writeOptions(r, &opts); err != nil {
		writeError(w, a, rep, err)
		return
	}
	opts.FieldManager = requestManager(opts.FieldManager, r)
	out, err := a.c.finalizeNamespace(r.Context(), obj.(*corev1.Namespace), opts)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	a.writeObject(w, rep, s.in, http.StatusOK, out)
}
