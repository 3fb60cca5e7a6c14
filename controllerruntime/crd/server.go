package crd

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// CRD is the type this package serves.
type CRD = apiextensionsv1.CustomResourceDefinition

// scheme has the apiextensions.k8s.io types, internal and v1, with their
// conversions and defaults. It is built once and never changed.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// Server serves CustomResourceDefinitions on a memcluster, and the kinds
// they define. Create it with [Serve].
type Server struct {
	c    *memcluster.Cluster
	crds *memcluster.Resource[*CRD]

	// served remembers, by CRD name, what each established CRD is served
	// as. Only the Stored hook of CRDs touches it, with the cluster's lock
	// held.
	served map[string]servedAs

	mu     sync.Mutex
	failed map[string]error // guarded by mu: why a CRD's status could not be written
}

// failure returns why the status of the CRD called name could not be
// written, if it could not.
func (s *Server) failure(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed[name]
}

// servedAs is what a CRD's kind was last served from: a new generation or
// new accepted names serve it again.
type servedAs struct {
	uid        types.UID
	generation int64
	names      apiextensionsv1.CustomResourceDefinitionNames
}

// Serve adds the apiextensions.k8s.io/v1 CustomResourceDefinition kind to
// c, with kube-apiserver's semantics:
//
//   - A CRD created or updated through the API (the REST handler, or
//     [Server.Install]) is defaulted and validated by
//     apiextensions-apiserver's registry strategy, as kube-apiserver
//     validates it (names, versions, structural schemas, defaults,
//     x-kubernetes-validations rules and their cost, ...). Its status
//     starts with storedVersions; a new storage version is appended to
//     storedVersions by updates.
//   - Once stored, it is at once what kube-apiserver's controllers make
//     of it: status.acceptedNames and the NamesAccepted condition (names
//     another CRD of the group has accepted are refused, with the
//     controller's reasons and messages), then Established, and its kind
//     is served in every served version, under the accepted names. Its
//     objects are pruned, defaulted and validated with its schemas (see
//     the package documentation). An update serves the new versions and
//     schemas at once, keeping the objects.
//   - Deleting a CRD adds the customresourcecleanup.apiextensions.k8s.io
//     finalizer and the Terminating condition, refuses new objects of its
//     kind, deletes them all (their finalizers hold them, as usual), and
//     once none is left removes the finalizer: the CRD is gone, and its
//     kind no longer served.
//
// These happen inside the request that wrote the CRD (kube-apiserver's
// controllers do them a moment later): the create's answer has no
// conditions yet, a read just after it has them. Serve errs if c serves
// CRDs already.
func Serve(c *memcluster.Cluster) (*Server, error) {
	s := &Server{c: c, served: map[string]servedAs{}, failed: map[string]error{}}
	crdStrategy := customresourcedefinition.NewStrategy(scheme)
	statusStrategy := customresourcedefinition.NewStatusStrategy(scheme)
	k := memcluster.Kind[*CRD]{
		GVK:           apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		Resource:      "customresourcedefinitions",
		ClusterScoped: true,
		New:           func() *CRD { return &CRD{} },
		NewList:       func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		Generation:    func(crd *CRD) any { return crd.Spec },
		CopyStatus:    copyStatus,
		StatusMeta:    statusMeta,
		PrepareCreate: func(crd *CRD) {
			in, err := toInternal(crd)
			if err != nil {
				return // validation reports it
			}
			crdStrategy.PrepareForCreate(context.Background(), in)
			crd.Status.StoredVersions = in.Status.StoredVersions
		},
		RequireResourceVersion: true,
		Default:                func(crd *CRD) { scheme.Default(crd) },
		ValidatesMetadata:      true,
		Validate: func(crd, old *CRD) field.ErrorList {
			in, err := toInternal(crd)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			if old == nil {
				return crdStrategy.Validate(context.Background(), in)
			}
			oldIn, err := toInternal(old)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			return crdStrategy.ValidateUpdate(context.Background(), in, oldIn)
		},
		ValidateStatus: func(crd, old *CRD) field.ErrorList {
			in, err := toInternal(crd)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			oldIn, err := toInternal(old)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			return statusStrategy.ValidateUpdate(context.Background(), in, oldIn)
		},
		PrepareDelete: s.prepareDelete,
		Stored:        s.stored,
	}
	crds, err := addKind(c, k)
	if err != nil {
		return nil, err
	}
	s.crds = crds
	return s, nil
}

// addKind adds k, turning NewResource's panic on a kind added twice into
// an error.
func addKind(c *memcluster.Cluster, k memcluster.Kind[*CRD]) (r *memcluster.Resource[*CRD], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("crd: serving CustomResourceDefinitions: %v", p)
		}
	}()
	return memcluster.NewResource(c, k), nil
}

// CRDs returns the storage of the CustomResourceDefinitions, for the
// cluster's own clients ([memcluster.Resource.Namespace] with "").
func (s *Server) CRDs() *memcluster.Resource[*CRD] { return s.crds }

func toInternal(crd *CRD) (*apiextensionsinternal.CustomResourceDefinition, error) {
	in := &apiextensionsinternal.CustomResourceDefinition{}
	if err := scheme.Convert(crd, in, nil); err != nil {
		return nil, fmt.Errorf("crd: converting %s to the internal version: %w", crd.Name, err)
	}
	return in, nil
}

// copyStatus keeps the stored status on updates (the status is a
// subresource), and takes a status write's. As kube-apiserver's strategy
// does on updates, a new storage version joins storedVersions; unlike
// kube-apiserver, a status write that drops it from storedVersions gets it
// back instead of a 422 (only a storage-version migration edits
// storedVersions, and it keeps the storage version).
func copyStatus(dst, src *CRD) {
	dst.Status = *src.Status.DeepCopy()
	for _, v := range dst.Spec.Versions {
		if v.Storage && !slices.Contains(dst.Status.StoredVersions, v.Name) {
			dst.Status.StoredVersions = append(dst.Status.StoredVersions, v.Name)
		}
	}
}

// statusMeta keeps the metadata of a status write, as kube-apiserver's
// status strategy for CRDs does (its finalizer controller removes the
// cleanup finalizer with a status write).
func statusMeta(dst, src *CRD) {
	dst.Labels = maps.Clone(src.Labels)
	dst.Annotations = maps.Clone(src.Annotations)
	dst.Finalizers = slices.Clone(src.Finalizers)
	dst.OwnerReferences = slices.Clone(src.OwnerReferences)
}

// prepareDelete starts the deletion of a CRD as kube-apiserver's registry
// does: with the cleanup finalizer and the Terminating condition.
func (s *Server) prepareDelete(crd *CRD) {
	now := metav1.NewTime(s.c.Clock().Now())
	crd.DeletionTimestamp = &now
	if !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer)
	}
	s.setCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	})
}

// setCondition sets a condition of crd as apihelpers.SetCRDCondition
// does, at the cluster's time: the transition time changes with the
// status only.
func (s *Server) setCondition(crd *CRD, cond apiextensionsv1.CustomResourceDefinitionCondition) {
	now := metav1.NewTime(s.c.Clock().Now())
	old := apihelpers.FindCRDCondition(crd, cond.Type)
	if old == nil {
		cond.LastTransitionTime = now
		crd.Status.Conditions = append(crd.Status.Conditions, cond)
		return
	}
	if old.Status != cond.Status || old.LastTransitionTime.IsZero() {
		old.LastTransitionTime = now
	}
	old.Status, old.Reason, old.Message = cond.Status, cond.Reason, cond.Message
}

// stored is the Stored hook of CRDs: what kube-apiserver's naming,
// establishing and finalizer controllers, and its CRD handler, do after a
// write. It works from the CRD as stored now (hooks of earlier writes may
// run after later writes).
func (s *Server) stored(tx *memcluster.Tx, _ watch.EventType, written *CRD) {
	crds := s.crds.Tx(tx)
	crd, ok := crds.Get("", written.Name)
	switch {
	case !ok:
		// Deleted without our finalizer's work (someone removed it): the
		// kind goes with its CRD.
		if was, served := s.served[written.Name]; served && was.uid == written.UID {
			delete(s.served, written.Name)
			_ = tx.RemoveCustom(written.Spec.Group, was.names.Plural, nil) // there when served
		}
	case crd.DeletionTimestamp != nil:
		s.finalize(tx, crd)
	default:
		s.establish(tx, crd)
	}
}

// establish accepts the names of crd, marks it established and serves
// its kind, or says which names conflict.
func (s *Server) establish(tx *memcluster.Tx, crd *CRD) {
	next := crd.DeepCopy()
	names, accepted := acceptNames(crd, s.crds.Tx(tx).List(""))
	next.Status.AcceptedNames = names
	if accepted.Status == apiextensionsv1.ConditionTrue {
		if err := s.serve(tx, next); err != nil {
			accepted = apiextensionsv1.CustomResourceDefinitionCondition{
				Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "KindConflict", Message: err.Error(),
			}
		}
	}
	s.setCondition(next, accepted)
	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted",
	}
	switch {
	case accepted.Status == apiextensionsv1.ConditionTrue:
		established = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted",
		}
		if old := apihelpers.FindCRDCondition(crd, apiextensionsv1.Established); old != nil && old.Status == apiextensionsv1.ConditionTrue {
			established = *old
		}
	case apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established):
		// Once established, a CRD stays so (its kind is still served
		// under the names accepted before).
		established = *apihelpers.FindCRDCondition(crd, apiextensionsv1.Established)
	}
	s.setCondition(next, established)
	if apiequality.Semantic.DeepEqual(crd.Status, next.Status) {
		return
	}
	s.writeStatus(tx, next)
}

// writeStatus writes the status of crd (a private copy). The status the
// controllers compute is valid: a failure is a bug of this package, kept
// for Install to report.
func (s *Server) writeStatus(tx *memcluster.Tx, crd *CRD) {
	if _, err := s.crds.Tx(tx).UpdateStatus(crd); err != nil && !apierrors.IsNotFound(err) {
		s.mu.Lock()
		s.failed[crd.Name] = fmt.Errorf("writing the status of %s: %w", crd.Name, err)
		s.mu.Unlock()
	}
}

// serve serves (or serves anew) the kind of crd, whose names are
// accepted, unless it is served from the same generation and names.
func (s *Server) serve(tx *memcluster.Tx, crd *CRD) error {
	as := servedAs{uid: crd.UID, generation: crd.Generation, names: crd.Status.AcceptedNames}
	if was, ok := s.served[crd.Name]; ok && was.uid == as.uid && was.generation == as.generation && apiequality.Semantic.DeepEqual(was.names, as.names) {
		return nil
	}
	k, err := customKind(crd)
	if err == nil {
		_, err = tx.ServeCustom(k)
	}
	if err != nil {
		return err
	}
	s.served[crd.Name] = as
	return nil
}

// finalize deletes the objects of a CRD being deleted and then lets it
// go, as kube-apiserver's finalizer controller does.
func (s *Server) finalize(tx *memcluster.Tx, crd *CRD) {
	if !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		return
	}
	was, served := s.served[crd.Name]
	if !served || was.uid != crd.UID {
		next := crd.DeepCopy()
		s.setCondition(next, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse, Reason: "NeverEstablished", Message: "resource was never established",
		})
		s.release(tx, next)
		return
	}
	next := crd.DeepCopy()
	s.setCondition(next, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress",
	})
	s.writeStatus(tx, next)
	name := crd.Name
	err := tx.RemoveCustom(crd.Spec.Group, was.names.Plural, func(tx *memcluster.Tx) {
		delete(s.served, name)
		cur, ok := s.crds.Tx(tx).Get("", name)
		if !ok {
			return
		}
		s.setCondition(cur, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse, Reason: "InstanceDeletionCompleted", Message: "removed all instances",
		})
		s.release(tx, cur)
	})
	if err != nil {
		// The kind is gone already (removed by hand, through memcluster).
		delete(s.served, name)
		s.release(tx, next)
	}
}

// release removes the cleanup finalizer of crd (a private copy) with a
// status write, as the finalizer controller does.
func (s *Server) release(tx *memcluster.Tx, crd *CRD) {
	apihelpers.CRDRemoveFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer)
	s.writeStatus(tx, crd)
}

// acceptNames returns the names crd may have (those other CRDs of its
// group have not accepted) and the NamesAccepted condition, as
// kube-apiserver's naming controller decides them.
func acceptNames(crd *CRD, all []*CRD) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := map[string]bool{}, map[string]bool{}
	for _, other := range all {
		if other.Spec.Group != crd.Spec.Group {
			continue
		}
		n := other.Status.AcceptedNames
		for _, r := range append([]string{n.Plural, n.Singular}, n.ShortNames...) {
			resources[r] = true
		}
		kinds[n.Kind], kinds[n.ListKind] = true, true
	}
	// free reports whether a requested name is the one already accepted
	// or used by no one.
	free := func(requested, accepted string, used map[string]bool) error {
		if requested == accepted || !used[requested] {
			return nil
		}
		return fmt.Errorf("%q is already in use", requested)
	}
	want, have := crd.Spec.Names, crd.Status.AcceptedNames
	names := have
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	if err := free(want.Plural, have.Plural, resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		names.Plural = want.Plural
	}
	if err := free(want.Singular, have.Singular, resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		names.Singular = want.Singular
	}
	if !slices.Equal(want.ShortNames, have.ShortNames) {
		var errs []error
		for _, sn := range want.ShortNames {
			if !slices.Contains(have.ShortNames, sn) {
				if err := free(sn, "", resources); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if len(errs) > 0 {
			conflict("ShortNamesConflict", utilerrors.NewAggregate(errs))
		} else {
			names.ShortNames = want.ShortNames
		}
	}
	if err := free(want.Kind, have.Kind, kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		names.Kind = want.Kind
	}
	if err := free(want.ListKind, have.ListKind, kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		names.ListKind = want.ListKind
	}
	names.Categories = want.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}
	return names, cond
}
