package memcluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// CustomKind describes a kind the cluster serves without a Go type, as
// kube-apiserver serves the kind of a CustomResourceDefinition: objects
// are *unstructured.Unstructured, stored in one version (the storage
// version) and served in every served one. Add it with [AddCustomKind];
// package controllerruntime/crd derives one from each
// CustomResourceDefinition created through the API, with its schema.
//
// What kube-apiserver does with a CRD's schema (pruning, defaulting,
// validation) is left to each version's [CustomSchema]; the rest is
// memcluster's: the generation (bumped by any change outside metadata,
// the status excluded where it is a subresource), updates that must carry
// a resourceVersion, strategic merge patches refused with 415, the status
// and scale subresources, conversion between versions, discovery.
type CustomKind struct {
	// Group is the API group, e.g. "example.com".
	Group string
	// Kind is the kind, e.g. "WebApp"; ListKind the kind of its lists
	// (empty: Kind+"List").
	Kind, ListKind string
	// Plural is the resource, e.g. "webapps"; Singular its singular
	// (empty: Kind in lower case).
	Plural, Singular string
	// ShortNames and Categories are listed in discovery, as kubectl reads
	// them ("kubectl get wa", "kubectl get all").
	ShortNames, Categories []string
	// ClusterScoped kinds have no namespace.
	ClusterScoped bool
	// Versions are the versions of the kind; exactly one is the storage
	// version. Only served ones are served.
	Versions []CustomVersion
	// WebhookConversion says the CRD converts between versions with a
	// webhook, which memcluster does not call: requests in a version other
	// than the storage version are answered with an error saying so.
	// False: the versions differ only in their apiVersion (the CRD's
	// conversion strategy None).
	WebhookConversion bool
	// TypeConverter gives type information for server-side apply and
	// managedFields of the kind, of every version; it becomes the kind's
	// [Kind.TypeConverter] (a later change of the kind replaces it; a kind
	// added without one has the cluster's Config.TypeConverter).
	TypeConverter managedfields.TypeConverter
}

// CustomVersion is one version of a [CustomKind].
type CustomVersion struct {
	// Name is the version, e.g. "v1".
	Name string
	// Served versions are served over the API; Storage is the version
	// objects are stored in.
	Served, Storage bool
	// Status says the version has a status subresource: updates keep the
	// stored status, and status writes change only the status.
	Status bool
	// Scale, if set, is the version's scale subresource.
	Scale *CustomScale
	// Schema prunes, defaults and validates objects of the version. Nil:
	// nothing is pruned or defaulted, and only metadata is validated (as
	// for a schema that preserves unknown fields).
	Schema CustomSchema
	// SelectableFields are the paths of the fields (".spec.color", as a
	// CRD's selectableFields give them) that field selectors of requests
	// in the version may name, beside metadata.name and, for a namespaced
	// kind, metadata.namespace; any other label is refused with 400
	// "field label not supported", as kube-apiserver refuses it. An
	// object matches on the field's value as text ("" when absent).
	SelectableFields []string
}

// CustomScale is the scale subresource of a custom kind: the paths (as in
// a CRD, ".spec.replicas") of the fields an autoscaling/v1 Scale reads and
// writes.
type CustomScale struct {
	SpecReplicasPath   string
	StatusReplicasPath string
	LabelSelectorPath  string // optional
}

// CustomSchema is the schema of one version of a custom kind: it does to
// objects what kube-apiserver does with a CustomResourceDefinition's
// OpenAPI schema. Package controllerruntime/crd implements it with
// k8s.io/apiextensions-apiserver. Its methods are called with the
// cluster's lock held, on objects of the version (apiVersion included)
// that are private to the call: they must not keep them.
type CustomSchema interface {
	// Coerce does what kube-apiserver does when it decodes an object of
	// the version (a request's body, a patched object, an object read
	// from storage or converted to the version): it drops the fields the
	// schema does not know and the nulls it does not allow, and coerces
	// the metadata of embedded objects. It returns the paths of the
	// unknown fields it dropped.
	Coerce(obj map[string]any) (unknown []string, err error)
	// Default applies the schema's defaults.
	Default(obj map[string]any)
	// Validate returns the errors of an object to be created: its
	// metadata, its schema and validation rules.
	Validate(obj *unstructured.Unstructured) field.ErrorList
	// ValidateUpdate returns the errors of an update of old to obj
	// (ratcheting, and transition rules, compare them).
	ValidateUpdate(obj, old *unstructured.Unstructured) field.ErrorList
	// ValidateStatusUpdate returns the errors of a status write: obj is old
	// with the written status.
	ValidateStatusUpdate(obj, old *unstructured.Unstructured) field.ErrorList
}

// customKind is a custom kind the cluster serves: its store and its
// current description, which a change replaces whole (the REST view
// reads it without the cluster's lock).
type customKind struct {
	res  *Resource[*unstructured.Unstructured]
	spec atomic.Pointer[customSpec]

	// guarded by the cluster's lock:
	terminating bool      // being removed: creates are refused
	removed     bool      // no longer served
	onRemoved   func(*Tx) // called once it is removed
}

// customSpec is a checked CustomKind.
type customSpec struct {
	CustomKind
	storage  string
	versions map[string]*CustomVersion
}

func (k CustomKind) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.Group, Resource: k.Plural}
}

// check returns k with its defaults, or what is wrong with it.
func (k CustomKind) check() (*customSpec, error) {
	var errs []error
	if k.Group == "" || k.Kind == "" || k.Plural == "" {
		errs = append(errs, errors.New("group, kind and plural are required"))
	}
	if k.ListKind == "" {
		k.ListKind = k.Kind + "List"
	}
	if k.Singular == "" {
		k.Singular = strings.ToLower(k.Kind)
	}
	s := &customSpec{versions: map[string]*CustomVersion{}}
	k.Versions = slices.Clone(k.Versions)
	for i := range k.Versions {
		v := &k.Versions[i]
		switch {
		case v.Name == "":
			errs = append(errs, errors.New("a version has no name"))
		case s.versions[v.Name] != nil:
			errs = append(errs, fmt.Errorf("version %s is listed twice", v.Name))
		}
		s.versions[v.Name] = v
		if v.Storage {
			if s.storage != "" {
				errs = append(errs, fmt.Errorf("versions %s and %s are both the storage version", s.storage, v.Name))
			}
			s.storage = v.Name
		}
		if sc := v.Scale; sc != nil && (sc.SpecReplicasPath == "" || sc.StatusReplicasPath == "") {
			errs = append(errs, fmt.Errorf("version %s: the scale subresource needs specReplicasPath and statusReplicasPath", v.Name))
		}
	}
	if s.storage == "" && len(k.Versions) > 0 {
		errs = append(errs, errors.New("no version is the storage version"))
	}
	if len(k.Versions) == 0 {
		errs = append(errs, errors.New("no versions"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("memcluster: custom kind %s: %w", k.groupResource(), err)
	}
	s.CustomKind = k
	return s, nil
}

func (s *customSpec) gvk(version string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: s.Group, Version: version, Kind: s.Kind}
}

// versionOf returns the version of obj by its apiVersion, if it is one of
// the kind's.
func (s *customSpec) versionOf(obj *unstructured.Unstructured) (*CustomVersion, bool) {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil || gv.Group != s.Group {
		return nil, false
	}
	v, ok := s.versions[gv.Version]
	return v, ok
}

// decode coerces and defaults obj, of version v, as kube-apiserver decodes
// an object: it returns the unknown fields dropped.
func (s *customSpec) decode(obj *unstructured.Unstructured, v *CustomVersion) ([]string, error) {
	if v.Schema == nil {
		return nil, nil
	}
	unknown, err := v.Schema.Coerce(obj.Object)
	if err != nil {
		return nil, err
	}
	v.Schema.Default(obj.Object)
	return unknown, nil
}

// noWebhook is the answer to a request that would need a conversion
// webhook.
func (s *customSpec) noWebhook(version string) error {
	return apierrors.NewInternalError(fmt.Errorf("memcluster does not call conversion webhooks: %s converts between its versions with one (spec.conversion.strategy Webhook), so only its storage version %s is served, not %s",
		s.groupResource(), s.storage, version))
}

// toStorage converts obj, of a served version and private to the caller,
// to the storage version: the apiVersion changes (the conversion strategy
// None), and the storage version's schema coerces it, as kube-apiserver
// encodes an object for storage.
func (s *customSpec) toStorage(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	v, ok := s.versionOf(obj)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("memcluster: %s is not a version of %s", obj.GetAPIVersion(), s.groupResource()))
	}
	if v.Name == s.storage {
		return obj, nil
	}
	if s.WebhookConversion {
		return nil, s.noWebhook(v.Name)
	}
	obj.SetGroupVersionKind(s.gvk(s.storage))
	if sv := s.versions[s.storage]; sv.Schema != nil {
		if _, err := sv.Schema.Coerce(obj.Object); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	return obj, nil
}

// fromStorage returns a copy of a stored object as kube-apiserver reads it
// in version: coerced and defaulted by the storage version's schema,
// converted, and coerced by the version's schema.
func (s *customSpec) fromStorage(stored *unstructured.Unstructured, version string) (*unstructured.Unstructured, error) {
	if version != s.storage && s.WebhookConversion {
		return nil, s.noWebhook(version)
	}
	v, ok := s.versions[version]
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("memcluster: %s is not a version of %s", version, s.groupResource()))
	}
	out := stored.DeepCopy()
	out.SetGroupVersionKind(s.gvk(s.storage))
	if _, err := s.decode(out, s.versions[s.storage]); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out.SetGroupVersionKind(s.gvk(version))
	if version != s.storage && v.Schema != nil {
		if _, err := v.Schema.Coerce(out.Object); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	return out, nil
}

// checkTypeMeta returns the version of obj, or the errors of its kind and
// apiVersion.
func (s *customSpec) checkTypeMeta(obj *unstructured.Unstructured) (*CustomVersion, field.ErrorList) {
	var errs field.ErrorList
	if obj.GetKind() != s.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), obj.GetKind(), "must be "+s.Kind))
	}
	v, ok := s.versionOf(obj)
	if !ok {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), obj.GetAPIVersion(), fmt.Sprintf("must be %s/<version>, a version of %s", s.Group, s.Kind)))
	}
	return v, errs
}

// AddCustomKind adds a kind without a Go type to the cluster, and returns
// its storage: its [Client] reads and writes objects as they are stored,
// in the storage version (the REST handler ([NewHandler]) serves every served
// version). An object written through it is pruned, defaulted and
// validated in the version of its apiVersion. Adding a kind served under
// the same group and plural changes it (new versions, schemas, names but
// the kind and scope), keeping its objects; another kind served under the
// same group and kind is an error.
func AddCustomKind(c *Cluster, k CustomKind) (*Resource[*unstructured.Unstructured], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serveCustomLocked(k)
}

// ServeCustom is [AddCustomKind] for a [Kind.Stored] hook.
func (tx *Tx) ServeCustom(k CustomKind) (*Resource[*unstructured.Unstructured], error) {
	return tx.cluster().serveCustomLocked(k)
}

// RemoveCustomKind stops serving a custom kind as kube-apiserver does when
// its CustomResourceDefinition is deleted: it refuses creates, deletes
// every object (finalizers keep theirs until they are removed), and once
// none is left, stops serving the kind.
func RemoveCustomKind(c *Cluster, group, plural string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	c.runHookLocked(func(tx *Tx) { err = tx.RemoveCustom(group, plural, nil) })
	return err
}

// RemoveCustom removes a custom kind as [RemoveCustomKind] does, and calls
// done (if set) once the kind is no longer served: at once, or from the
// write that deletes its last object.
func (tx *Tx) RemoveCustom(group, plural string, done func(*Tx)) error {
	c := tx.cluster()
	gr := schema.GroupResource{Group: group, Resource: plural}
	ck := c.customs[gr]
	if ck == nil {
		return fmt.Errorf("memcluster: no custom kind %s", gr)
	}
	if ck.terminating {
		return nil // under way
	}
	ck.terminating, ck.onRemoved = true, done
	r := ck.res
	for _, key := range r.keysLocked() {
		if obj, ok := r.objs[key]; ok && obj.GetDeletionTimestamp() == nil {
			if _, _, err := r.deleteLocked(key, metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
	}
	c.finishRemovalLocked(tx, ck)
	return nil
}

// finishRemovalLocked stops serving a terminating custom kind that has no
// objects left.
func (c *Cluster) finishRemovalLocked(tx *Tx, ck *customKind) {
	if !ck.terminating || ck.removed || len(ck.res.objs) > 0 {
		return
	}
	ck.removed = true
	r := ck.res
	delete(c.customs, ck.spec.Load().groupResource())
	delete(c.kinds, r.kind.groupKind())
	c.order = slices.DeleteFunc(c.order, func(k collector) bool { return k == collector(r) })
	c.kindsChanged++
	for _, w := range r.watchers {
		w.end(false)
	}
	if ck.onRemoved != nil {
		ck.onRemoved(tx)
	}
}

func (c *Cluster) serveCustomLocked(k CustomKind) (*Resource[*unstructured.Unstructured], error) {
	spec, err := k.check()
	if err != nil {
		return nil, err
	}
	gr := k.groupResource()
	gk := schema.GroupKind{Group: k.Group, Kind: k.Kind}
	if ck := c.customs[gr]; ck != nil {
		if ck.terminating {
			return nil, fmt.Errorf("memcluster: custom kind %s is being removed", gr)
		}
		// The store's Kind is read without the lock: what may change is
		// read from the description instead (the versions, the schemas,
		// the type information).
		r := ck.res
		if old := r.kind.groupKind(); old != gk {
			return nil, fmt.Errorf("memcluster: custom kind %s cannot change its kind from %s to %s", gr, old.Kind, gk.Kind)
		}
		if old := ck.spec.Load(); old.ClusterScoped != k.ClusterScoped {
			return nil, fmt.Errorf("memcluster: custom kind %s cannot change its scope", gr)
		}
		ck.spec.Store(spec)
		c.kindsChanged++
		return r, nil
	}
	for other := range c.customs {
		if other.Group == k.Group && c.customs[other].spec.Load().Kind == k.Kind {
			return nil, fmt.Errorf("memcluster: kind %s is served already, as %s", gk, other)
		}
	}
	ck := &customKind{}
	ck.spec.Store(spec)
	r, err := newResourceLocked(c, ck.kind())
	if err != nil {
		return nil, err
	}
	ck.res = r
	c.customs[gr] = ck
	return r, nil
}

// kind returns the strategy of a custom kind's store. Its hooks read the
// kind's description when they run, so that a change applies at once.
func (ck *customKind) kind() Kind[*unstructured.Unstructured] {
	k := ck.strategy()
	if ck.spec.Load().TypeConverter != nil {
		// Later descriptions' type information replaces it; a kind that
		// had none at first has the cluster's.
		k.TypeConverter = customTypeConverter{ck}
	}
	return k
}

func (ck *customKind) strategy() Kind[*unstructured.Unstructured] {
	spec := ck.spec.Load()
	type U = unstructured.Unstructured
	// hasStatus reports whether the version of obj has a status subresource.
	hasStatus := func(obj *U) bool {
		v, ok := ck.spec.Load().versionOf(obj)
		return ok && v.Status
	}
	return Kind[*U]{
		GVK:           spec.gvk(spec.storage),
		Resource:      spec.Plural,
		ClusterScoped: spec.ClusterScoped,
		New: func() *U {
			u := &U{Object: map[string]any{}}
			s := ck.spec.Load()
			u.SetGroupVersionKind(s.gvk(s.storage))
			return u
		},
		Generation: func(obj *U) any { return withoutMetadata(obj.Object) },
		CopyStatus: func(dst, src *U) {
			if !hasStatus(dst) {
				return
			}
			if st, ok := src.Object["status"]; ok {
				dst.Object["status"] = deepCopyJSON(st)
			} else {
				delete(dst.Object, "status")
			}
		},
		PrepareCreate: func(obj *U) {
			if hasStatus(obj) {
				delete(obj.Object, "status")
			}
		},
		RequireResourceVersion: true,
		Default: func(obj *U) {
			s := ck.spec.Load()
			if v, ok := s.versionOf(obj); ok {
				_, _ = s.decode(obj, v) // a malformed object fails validation
			}
		},
		Validate: func(obj, old *U) field.ErrorList {
			s := ck.spec.Load()
			v, errs := s.checkTypeMeta(obj)
			if len(errs) > 0 {
				return errs
			}
			switch {
			case v.Schema == nil && old == nil:
				return apivalidation.ValidateObjectMetaAccessor(obj, !s.ClusterScoped, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
			case v.Schema == nil:
				return apivalidation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))
			case old == nil:
				return v.Schema.Validate(obj)
			default:
				return v.Schema.ValidateUpdate(obj, old)
			}
		},
		ValidateStatus: func(obj, old *U) field.ErrorList {
			s := ck.spec.Load()
			v, errs := s.checkTypeMeta(obj)
			if len(errs) > 0 || v.Schema == nil {
				return errs
			}
			return v.Schema.ValidateStatusUpdate(obj, old)
		},
		NoStrategicMerge: true,
		Stored: func(tx *Tx, ev watch.EventType, _ *U) {
			if ev == watch.Deleted {
				tx.cluster().finishRemovalLocked(tx, ck)
			}
		},
		asVersionOf: func(old, in *U) *U {
			s := ck.spec.Load()
			v, ok := s.versionOf(in)
			if !ok {
				return old.DeepCopy()
			}
			out, err := s.fromStorage(old, v.Name)
			if err != nil {
				return old.DeepCopy() // toStorage refuses the write
			}
			return out
		},
		toStorage: func(in *U) (*U, error) { return ck.spec.Load().toStorage(in) },
		servesVersion: func(version string) bool {
			_, ok := ck.spec.Load().versions[version]
			return ok
		},
		customFields:      ck.fieldSelection,
		ValidatesMetadata: true,
	}
}

// fieldSelection answers the field selectors of a request in version
// ("": the storage version) with the version's selectable fields, as
// kube-apiserver's field-label conversion and GetAttrs of custom
// resources do.
func (ck *customKind) fieldSelection(version string) fieldSelection[*unstructured.Unstructured] {
	s := ck.spec.Load()
	if version == "" {
		version = s.storage
	}
	namespaced := !s.ClusterScoped
	var labels []string
	if v := s.versions[version]; v != nil {
		for _, p := range v.SelectableFields {
			labels = append(labels, strings.TrimPrefix(p, "."))
		}
	}
	return fieldSelection[*unstructured.Unstructured]{
		convert: func(label, value string) (string, string, error) {
			if label == "metadata.name" || namespaced && label == "metadata.namespace" || slices.Contains(labels, label) {
				return label, value, nil
			}
			return "", "", labelNotSupported(label)
		},
		fields: func(obj *unstructured.Unstructured) fields.Set {
			set := metaFields(obj, namespaced)
			for _, l := range labels {
				set[l] = ""
				if v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(l, ".")...); ok && v != nil {
					set[l] = fmt.Sprint(v)
				}
			}
			return set
		},
	}
}

// withoutMetadata is what bumps a custom resource's generation: everything
// but its metadata.
func withoutMetadata(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

func deepCopyJSON(v any) any { return runtime.DeepCopyJSONValue(v) }

// customTypeConverter is the type information of a custom kind's current
// description.
type customTypeConverter struct{ ck *customKind }

func (t customTypeConverter) current() (managedfields.TypeConverter, error) {
	s := t.ck.spec.Load()
	if s.TypeConverter == nil {
		return nil, fmt.Errorf("memcluster: custom kind %s has no type information", s.groupResource())
	}
	return s.TypeConverter, nil
}

// ObjectToTyped converts obj with the kind's type information.
func (t customTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tc, err := t.current()
	if err != nil {
		return nil, err
	}
	return tc.ObjectToTyped(obj, opts...)
}

// TypedToObject converts v back with the kind's type information.
func (t customTypeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	tc, err := t.current()
	if err != nil {
		return nil, err
	}
	return tc.TypedToObject(v)
}
