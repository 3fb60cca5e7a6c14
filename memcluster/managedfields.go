package memcluster

import (
	"github.com/ctrlkit/ctrlkit/internal/testhooks"

	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// This file tracks metadata.managedFields with apimachinery's field
// managers (k8s.io/apimachinery/pkg/util/managedfields), the library
// kube-apiserver itself records them and serves server-side apply with.
// What memcluster adds is what kube-apiserver's handlers and registries
// add around that library: which manager writes, which fields each
// kind and subresource resets, the cluster's clock for the timestamps,
// and the conversions between the stored Go types and the library's.

// tracker is the managedFields state of one kind: resolved at its first
// write (so that a cluster that never writes a kind never builds its
// type information), guarded by the cluster's lock.
type tracker struct {
	resolved bool
	// gvk is the kind and version whose writes it records.
	gvk schema.GroupVersionKind
	// main, status and scale record the writes of the resource and of
	// its status and scale subresources, finalize (namespaces only) those
	// of namespaces/<name>/finalize; main is nil when the kind is not
	// tracked.
	main, status, scale, finalize *managedfields.FieldManager
	// fast computes the updates of main, status and finalize the cheap
	// way (see managedfields_fast.go), keyed by their field manager.
	fast map[*managedfields.FieldManager]*fastRecorder
	// mainReset and statusReset are the top-level fields (spec, status)
	// that a write of the resource or of its status resets: the field
	// manager ignores their changes, so they are left out of both objects
	// it compares, which gives the same record without converting them.
	mainReset, statusReset []string
	// missing says why the kind is not tracked, for the 415 of an apply.
	missing string
}

// trackerLocked returns the field managers of the kind, resolving them
// at the first call.
func (r *Resource[T]) trackerLocked() *tracker {
	if !r.track.resolved {
		r.resolveTracker(&r.track, r.kind.GVK)
	}
	return &r.track
}

// trackerOfLocked returns the field managers that record a write of obj:
// those of its version for a custom kind served in several (as
// kube-apiserver records a custom resource's writes under the version of
// the request, with that version's field managers), else the kind's.
func (r *Resource[T]) trackerOfLocked(obj T) *tracker {
	return r.versionTrackerLocked(obj.GetObjectKind().GroupVersionKind().Version)
}

// versionTrackerLocked returns the field managers of the kind's version
// ("" or an unknown one: the kind's own).
func (r *Resource[T]) versionTrackerLocked(version string) *tracker {
	if version == "" || version == r.kind.GVK.Version || r.kind.servesVersion == nil || !r.kind.servesVersion(version) {
		return r.trackerLocked()
	}
	t := r.versionTracks[version]
	if t == nil {
		if r.versionTracks == nil {
			r.versionTracks = map[string]*tracker{}
		}
		t = &tracker{}
		gvk := r.kind.GVK
		gvk.Version = version
		r.resolveTracker(t, gvk)
		r.versionTracks[version] = t
	}
	return t
}

// resolveTracker builds t, the field managers of gvk (the kind's, or
// another version of a custom kind).
func (r *Resource[T]) resolveTracker(t *tracker, gvk schema.GroupVersionKind) {
	t.resolved, t.gvk = true, gvk
	tc, from := r.kind.TypeConverter, "Kind.TypeConverter"
	if tc == nil {
		tc, from = r.c.cfg.TypeConverter, "Config.TypeConverter"
	}
	if tc == nil {
		t.missing = fmt.Sprintf("memcluster has no type information for %s, so it neither tracks managedFields nor serves server-side apply for it: "+
			"set memcluster.Config.TypeConverter (for instance k8s.io/client-go/applyconfigurations.NewTypeConverter(scheme) for the built-in kinds; "+
			"controllerruntime/clustertest sets it) or this kind's Kind.TypeConverter", gvk)
		return
	}
	empty := r.kind.New()
	empty.GetObjectKind().SetGroupVersionKind(gvk)
	tc, err := typeConverterFor(tc, empty)
	if err != nil {
		t.missing = fmt.Sprintf("memcluster: the type converter of %s (%s) has no type for it (%v), so memcluster neither tracks managedFields nor serves server-side apply for it: "+
			"set Kind.TypeConverter for this kind (for example managedfields.NewDeducedTypeConverter())", from, gvk, err)
		return
	}
	tc = withoutManagedFields{tc}
	conv := kindConversions[T]{kind: &r.kind, gvk: gvk}
	custom := r.kind.NoStrategicMerge
	newManager := managedfields.NewDefaultFieldManager
	if custom {
		newManager = managedfields.NewDefaultCRDFieldManager
	}
	gv := gvk.GroupVersion()
	hasStatus := r.kind.CopyStatus != nil
	t.fast = map[*managedfields.FieldManager]*fastRecorder{}
	build := func(subresource string) (*managedfields.FieldManager, []string) {
		reset := resetFields(gvk, custom, hasStatus, subresource)
		filters := fieldpath.NewExcludeFilterSetMap(reset)
		fm, err := newManager(tc, conv, conv, conv, gvk, gv, subresource, filters)
		if err != nil { // the converter is not nil: this cannot fail
			panic(fmt.Sprintf("memcluster: field manager of %s: %v", gvk, err))
		}
		t.fast[fm] = &fastRecorder{tc: tc, version: gv.String(), subresource: subresource, reset: filters[fieldpath.APIVersion(gv.String())]}
		return fm, topLevel(reset[fieldpath.APIVersion(gv.String())], empty)
	}
	t.main, t.mainReset = build("")
	if hasStatus {
		t.status, t.statusReset = build("status")
	}
	if gvk.GroupKind() == namespaceGK {
		t.finalize, _ = build("finalize") // resets what the main resource resets
	}
	if scaleKind(gvk) {
		// A write of the scale is one of spec.replicas: the parent's
		// field manager, for the subresource, records nothing else.
		only := map[fieldpath.APIVersion]fieldpath.Filter{fieldpath.APIVersion(gv.String()): fieldpath.NewIncludeMatcherFilter(fieldpath.MakePrefixMatcherOrDie("spec", "replicas"))}
		fm, err := newManager(tc, conv, conv, conv, gvk, gv, "scale", only)
		if err != nil {
			panic(fmt.Sprintf("memcluster: field manager of %s/scale: %v", gvk, err))
		}
		t.scale = fm
	}
}

// topLevel returns the top-level fields of set, other than metadata,
// that example's type has.
func topLevel(set *fieldpath.Set, example runtime.Object) []string {
	if set == nil {
		return nil
	}
	var out []string
	set.Iterate(func(p fieldpath.Path) {
		if len(p) != 1 || p[0].FieldName == nil || *p[0].FieldName == "metadata" {
			return
		}
		if _, ok := example.(*unstructured.Unstructured); ok || jsonField(reflect.TypeOf(example).Elem(), *p[0].FieldName) != nil {
			out = append(out, *p[0].FieldName)
		}
	})
	return out
}

// jsonField returns the index of the field of struct type t that encodes
// as name, or nil.
func jsonField(t reflect.Type, name string) []int {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name && f.IsExported() {
			return f.Index
		}
	}
	return nil
}

// resetFields returns the fields a write of the kind (subresource "")
// or of its status subresource resets, which are not recorded as the
// writer's: kube-apiserver's strategies' GetResetFields. A kind with a
// status subresource resets the status on the main resource (and on
// namespaces/finalize) and the spec on the status one; deployments/status
// also resets the labels, pods/status the deletionTimestamp and the
// ownerReferences, and the status of a custom resource all but the
// status.
func resetFields(gvk schema.GroupVersionKind, custom, hasStatus bool, subresource string) map[fieldpath.APIVersion]*fieldpath.Set {
	if !hasStatus {
		return nil
	}
	v := fieldpath.APIVersion(gvk.GroupVersion().String())
	if subresource == "" || subresource == "finalize" {
		return map[fieldpath.APIVersion]*fieldpath.Set{v: fieldpath.NewSet(fieldpath.MakePathOrDie("status"))}
	}
	paths := []fieldpath.Path{fieldpath.MakePathOrDie("spec")}
	switch {
	case custom:
		paths = append(paths, fieldpath.MakePathOrDie("metadata"))
	case gvk == appsv1.SchemeGroupVersion.WithKind("Deployment"):
		paths = append(paths, fieldpath.MakePathOrDie("metadata", "labels"))
	case gvk == corev1.SchemeGroupVersion.WithKind("Pod"):
		paths = append(paths, fieldpath.MakePathOrDie("metadata", "deletionTimestamp"), fieldpath.MakePathOrDie("metadata", "ownerReferences"))
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{v: fieldpath.NewSet(paths...)}
}

// author is who makes a write, for metadata.managedFields: its field
// manager, whether the object written already carries the managedFields
// an apply computed, whether it writes through the scale subresource,
// and whether it changes nothing but the status (the kubelet: its record
// then leaves the unchanged metadata out of the compared objects).
type author struct {
	manager    string
	applied    bool
	scale      bool
	statusOnly bool
}

// sameMetadata reports whether two typed objects have the same metadata
// but for their resourceVersion and managedFields: then a write of one
// over the other changes nothing the field manager records in the
// metadata, and records the same leaving the metadata out (a typed
// object's metadata always has the keys of its associative lists, so
// leaving it out loses no validation error either). Any difference, even
// of a time's location, says no.
func sameMetadata(a, b metav1.Object) bool {
	ma, ok := a.(metav1.ObjectMetaAccessor)
	mb, ok2 := b.(metav1.ObjectMetaAccessor)
	if !ok || !ok2 {
		return false
	}
	pa, ok := ma.GetObjectMeta().(*metav1.ObjectMeta)
	pb, ok2 := mb.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok || !ok2 || pa == nil || pb == nil {
		return false
	}
	x, y := *pa, *pb
	x.ResourceVersion, y.ResourceVersion = "", ""
	x.ManagedFields, y.ManagedFields = nil, nil
	return reflect.DeepEqual(x, y)
}

// checkBareStatusLocked, under testhooks.CheckManagedFields, has the
// field manager record a status write of next over old (same metadata)
// with and without the metadata, and reports a difference.
func (r *Resource[T]) checkBareStatusLocked(old, next T, a author) {
	if !testhooks.CheckManagedFields.Load() || a.applied || r.c.untracked(a) {
		return
	}
	t := r.trackerOfLocked(next)
	if t.main == nil || t.status == nil {
		return
	}
	view := func(obj T, bare bool) T { return r.forTracking(obj, t.gvk, t.statusReset, bare) }
	full := r.libraryUpdate(t.status, view(old, false), view(next, false), a.manager)
	bare := r.libraryUpdate(t.status, view(old, true), view(next, true), a.manager)
	if diff := managedFieldsDiff(t.gvk, a.manager, bare, full); diff != "" {
		testhooks.ManagedFieldsMismatch("without the metadata (first) and with it: " + diff)
	}
}

// The managers of the writes the cluster makes itself, as a real
// cluster records them: kube-controller-manager's controllers (the
// prefix of their User-Agent), kube-apiserver's own writes through its
// loopback client (the namespaces it starts with, an eviction's update
// of a budget), and the kubelet's.
const (
	controllerManager = "kube-controller-manager"
	apiserverManager  = "kube-apiserver"
	kubeletManager    = "kubelet"
)

// untracked reports whether a's write is not recorded: an update by one
// of Config.UntrackedManagers.
func (c *Cluster) untracked(a author) bool {
	return !a.applied && slices.Contains(c.cfg.UntrackedManagers, a.manager)
}

// managerOf returns the field manager of a typed client's write: the
// options' one, else the program's name, as client-go's default
// User-Agent gives it to kube-apiserver.
func managerOf(fieldManager string) author {
	if fieldManager == "" {
		fieldManager = programName()
	}
	return author{manager: fieldManager}
}

// programName is the field manager of a write without one: what
// kube-apiserver makes of client-go's default User-Agent, the base name
// of the program ("myoperator.test" in a test binary).
var programName = sync.OnceValue(func() string {
	if len(os.Args) == 0 || os.Args[0] == "" {
		return "unknown"
	}
	name := userAgentManager(filepath.Base(os.Args[0]))
	if name == "" {
		return "unknown"
	}
	return name
})

// userAgentManager is kube-apiserver's field manager for a request
// without a fieldManager parameter: the User-Agent up to the first '/',
// without unprintable characters, at most 128 bytes.
func userAgentManager(userAgent string) string {
	prefix, _, _ := strings.Cut(userAgent, "/")
	var b strings.Builder
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// recordCreateLocked returns the managedFields of in, about to be
// created by a. It runs before the kind's PrepareCreate, on a defaulted
// copy: kube-apiserver records a create as the request decoded it (with
// its defaults), before its strategy resets the status or allocates
// anything.
func (r *Resource[T]) recordCreateLocked(in T, a author) []metav1.ManagedFieldsEntry {
	t := r.trackerOfLocked(in)
	if t.main == nil {
		return nil
	}
	if a.applied {
		return in.GetManagedFields()
	}
	if r.c.untracked(a) {
		return nil
	}
	obj := deepCopy(in)
	if r.kind.Default != nil {
		r.kind.Default(obj)
	}
	if r.kind.fieldManagerView != nil {
		r.kind.fieldManagerView(obj)
	}
	live := r.kind.New()
	return r.recordUpdate(t, t.main, t.mainReset, false, live, obj, a.manager)
}

// recordUpdateAsSentLocked returns the managedFields of an update of old
// to in (as sent, before the kind's PrepareUpdate) by a, recorded as
// kube-apiserver records an update: on the object as decoded, with its
// defaults, before its strategy prepares it (keeping a namespace's
// finalizers, a Service's allocations, a DaemonSet's template
// generation). ok is false where recording the prepared object, as
// [Resource.recordUpdateLocked] does, gives the same: a kind without a
// PrepareUpdate or a conversion view, an untracked kind, an apply.
func (r *Resource[T]) recordUpdateAsSentLocked(old, in T, a author) (managed []metav1.ManagedFieldsEntry, ok bool) {
	if r.kind.PrepareUpdate == nil && r.kind.fieldManagerView == nil || a.applied {
		return nil, false
	}
	if r.trackerOfLocked(in).main == nil {
		return nil, false
	}
	if r.c.untracked(a) {
		return old.GetManagedFields(), true
	}
	obj := deepCopy(in)
	if r.kind.Default != nil {
		r.kind.Default(obj)
	}
	if r.kind.fieldManagerView != nil {
		r.kind.fieldManagerView(obj)
	}
	r.recordUpdateLocked(old, obj, a, "")
	return obj.GetManagedFields(), true
}

// recordUpdateLocked sets the managedFields of in, which replaces old
// through the subresource sub ("", "status" or "finalize"), for a write
// by a: the library's record of the update, or, when a is an apply, what
// in already carries. Without tracking, in has none.
func (r *Resource[T]) recordUpdateLocked(old, in T, a author, sub string) {
	t := r.trackerOfLocked(in)
	switch {
	case t.main == nil:
		in.SetManagedFields(nil)
	case a.applied:
	case r.c.untracked(a):
		in.SetManagedFields(old.GetManagedFields())
	case a.scale && (t.scale == nil || !r.scaleTracked(old)):
		// kube-apiserver's Scale has no managedFields then, and its field
		// manager does not start tracking on an update. (A custom kind's
		// scale has no field manager here: its writes are not recorded.)
		in.SetManagedFields(old.GetManagedFields())
	case a.scale:
		in.SetManagedFields(scaleEntries(r.recordUpdate(t, t.scale, t.mainReset, false, old, in, a.manager)))
	case sub == "status":
		in.SetManagedFields(r.recordUpdate(t, t.status, t.statusReset, a.statusOnly, old, in, a.manager))
	case sub == "finalize" && t.finalize != nil:
		in.SetManagedFields(r.recordUpdate(t, t.finalize, t.mainReset, false, old, in, a.manager))
	default:
		in.SetManagedFields(r.recordUpdate(t, t.main, t.mainReset, false, old, in, a.manager))
	}
}

// recordUpdate runs fm's update (one of t's) of live into obj by manager and returns
// the resulting managedFields, with the times of the entries it wrote
// from the cluster's clock. As kube-apiserver does, a failure keeps the
// live object's entries. The top-level fields reset, which the write
// resets (live and obj have the same), are left out of both, and so is
// the rest of the metadata if bare (which the write does not change
// either).
func (r *Resource[T]) recordUpdate(t *tracker, fm *managedfields.FieldManager, reset []string, bare bool, live, obj T, manager string) []metav1.ManagedFieldsEntry {
	liveView, objView := r.forTracking(live, t.gvk, reset, bare), r.forTracking(obj, t.gvk, reset, bare)
	if f := t.fast[fm]; f != nil {
		entries, sets, ok := r.fastUpdateLocked(f, liveView, objView, manager, r.c.now())
		if ok && testhooks.CheckManagedFields.Load() {
			slow := r.libraryUpdate(fm, r.forTracking(live, t.gvk, reset, bare), r.forTracking(obj, t.gvk, reset, bare), manager)
			if diff := managedFieldsDiff(t.gvk, manager, entries, slow); diff != "" {
				testhooks.ManagedFieldsMismatch(diff)
				return slow
			}
		}
		if ok {
			r.rememberLocked(objectKey(obj), entries, sets)
			return entries
		}
	}
	return r.libraryUpdate(fm, liveView, objView, manager)
}

// libraryUpdate is [Resource.recordUpdate] by the field manager itself.
func (r *Resource[T]) libraryUpdate(fm *managedfields.FieldManager, live, obj T, manager string) []metav1.ManagedFieldsEntry {
	sent := obj.GetManagedFields()
	out, err := fm.Update(live, obj, manager)
	if err != nil {
		return live.GetManagedFields()
	}
	m, ok := out.(metav1.Object)
	if !ok {
		return live.GetManagedFields()
	}
	return r.c.stampTimes(m.GetManagedFields(), live.GetManagedFields(), sent)
}

// stampTimes gives the entries of got that the field manager wrote (it
// stamps them with the wall clock) the cluster's time, whole seconds as
// kube-apiserver's are once encoded, and sorts them again as the library
// does. An entry it did not write keeps a time found in before (the
// entries it started from).
func (c *Cluster) stampTimes(got []metav1.ManagedFieldsEntry, before ...[]metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if len(got) == 0 {
		return got
	}
	kept := func(t *metav1.Time) bool {
		for _, entries := range before {
			for _, e := range entries {
				if e.Time != nil && e.Time.Equal(t) {
					return true
				}
			}
		}
		return false
	}
	now := c.now()
	for i := range got {
		if t := got[i].Time; t != nil && !kept(t) {
			got[i].Time = &now
		}
	}
	sortManagedFields(got)
	return got
}

// scaleTracked reports whether kube-apiserver's Scale of obj has
// managedFields: whether an entry of obj's version owns spec.replicas,
// the only entries it maps to the Scale.
func (r *Resource[T]) scaleTracked(obj T) bool {
	replicas := fieldpath.MakePathOrDie("spec", "replicas")
	version := r.kind.GVK.GroupVersion().String()
	for _, e := range obj.GetManagedFields() {
		if e.APIVersion != version || e.FieldsV1 == nil {
			continue
		}
		var set fieldpath.Set
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err == nil && set.Has(replicas) {
			return true
		}
	}
	return false
}

// scaleEntries returns entries with the scale subresource's without a
// time, as kube-apiserver records them: it maps the entries of the Scale
// to the parent's, and the parent has no time for a Scale's manager.
func scaleEntries(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	for i := range entries {
		if entries[i].Subresource == "scale" {
			entries[i].Time = nil
		}
	}
	sortManagedFields(entries)
	return entries
}

// sortManagedFields orders entries as the library encodes them: by
// operation, time (in seconds), manager, apiVersion and subresource.
func sortManagedFields(entries []metav1.ManagedFieldsEntry) {
	seconds := func(t *metav1.Time) int64 {
		if t == nil {
			return 0
		}
		return t.Unix()
	}
	slices.SortStableFunc(entries, func(p, q metav1.ManagedFieldsEntry) int {
		return cmp.Or(
			cmp.Compare(p.Operation, q.Operation),
			cmp.Compare(seconds(p.Time), seconds(q.Time)),
			cmp.Compare(p.Manager, q.Manager),
			cmp.Compare(p.APIVersion, q.APIVersion),
			cmp.Compare(p.Subresource, q.Subresource))
	})
}

// managedFieldsEqual reports whether two objects have the same managedFields.
func managedFieldsEqual(a, b metav1.Object) bool {
	return semanticEqual(a.GetManagedFields(), b.GetManagedFields())
}

// withKind returns obj with its apiVersion and kind set to gvk, which
// the type converter needs: obj itself if they are set, else a shallow
// copy (the cluster's objects are stored without them, and a stored
// snapshot is never modified).
func withKind[T Object](obj T, gvk schema.GroupVersionKind) T {
	if obj.GetObjectKind().GroupVersionKind() == gvk {
		return obj
	}
	out := shallowCopy(obj)
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out
}

// forTracking returns a shallow copy of obj with gvk's apiVersion and
// kind, without the top-level fields named in without, and, if bare,
// without its metadata but what the field manager reads (the name,
// namespace, uid and managedFields).
func (r *Resource[T]) forTracking(obj T, gvk schema.GroupVersionKind, without []string, bare bool) T {
	out := shallowCopy(obj)
	out.GetObjectKind().SetGroupVersionKind(gvk)
	if len(without) == 0 && !bare {
		return out
	}
	kept := metav1.ObjectMeta{Name: out.GetName(), Namespace: out.GetNamespace(), UID: out.GetUID(), ManagedFields: out.GetManagedFields()}
	if u, ok := any(out).(*unstructured.Unstructured); ok {
		for _, f := range without {
			delete(u.Object, f)
		}
		if bare {
			md, _ := u.Object["metadata"].(map[string]any)
			u.Object["metadata"] = map[string]any{"name": md["name"], "namespace": md["namespace"], "uid": md["uid"], "managedFields": md["managedFields"]}
		}
		return out
	}
	v := reflect.ValueOf(out).Elem()
	for _, f := range without {
		if idx := jsonField(v.Type(), f); idx != nil {
			fv := v.FieldByIndex(idx)
			fv.Set(reflect.Zero(fv.Type()))
		}
	}
	if idx := jsonField(v.Type(), "metadata"); bare && idx != nil {
		if fv := v.FieldByIndex(idx); fv.Type() == reflect.TypeFor[metav1.ObjectMeta]() {
			fv.Set(reflect.ValueOf(kept))
		}
	}
	return out
}

// shallowCopy copies the top-level struct (or map) of obj, and the
// metadata map of an unstructured one: enough to set its TypeMeta and
// metadata fields without touching obj.
func shallowCopy[T Object](obj T) T {
	if u, ok := any(obj).(*unstructured.Unstructured); ok {
		c := maps.Clone(u.Object)
		if md, ok := c["metadata"].(map[string]any); ok {
			c["metadata"] = maps.Clone(md)
		}
		return any(&unstructured.Unstructured{Object: c}).(T)
	}
	v := reflect.ValueOf(obj)
	out := reflect.New(v.Type().Elem())
	out.Elem().Set(v.Elem())
	return out.Interface().(T)
}

// kindConversions is the scheme of one kind for the field manager: its
// converter, defaulter and creater, for the version gvk. A built-in kind
// has one version, so converting is setting the apiVersion and kind
// (and, for the merged object of an apply, which the library returns as
// unstructured, decoding it into the kind's Go type); a custom kind
// served in several versions converts between them as kube-apiserver
// does without a webhook, by setting the apiVersion. Defaults are
// applied by the write itself, as for any write.
type kindConversions[T Object] struct {
	kind *Kind[T]
	gvk  schema.GroupVersionKind
}

var (
	_ runtime.ObjectConvertor = kindConversions[*corev1.Pod]{}
	_ runtime.ObjectDefaulter = kindConversions[*corev1.Pod]{}
	_ runtime.ObjectCreater   = kindConversions[*corev1.Pod]{}
)

func (k kindConversions[T]) Convert(in, out, _ any) error {
	return fmt.Errorf("memcluster: cannot convert %T to %T", in, out)
}

// ours reports whether gvk is the converter's version, or another one
// of its custom kind.
func (k kindConversions[T]) ours(gvk schema.GroupVersionKind) bool {
	return gvk == k.gvk || gvk.GroupKind() == k.gvk.GroupKind() && k.kind.servesVersion != nil && k.kind.servesVersion(gvk.Version)
}

func (k kindConversions[T]) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{k.gvk})
	if !ok || !k.ours(gvk) {
		return nil, runtime.NewNotRegisteredGVKErrForTarget("memcluster", in.GetObjectKind().GroupVersionKind(), target)
	}
	switch obj := in.(type) {
	case T:
		if obj.GetObjectKind().GroupVersionKind() == gvk {
			return obj, nil // the field manager only reads what it converts
		}
		out := shallowCopy(obj)
		out.GetObjectKind().SetGroupVersionKind(gvk)
		return out, nil
	case *unstructured.Unstructured:
		out := k.kind.New()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out); err != nil {
			return nil, fmt.Errorf("memcluster: decode %s: %w", gvk.Kind, err)
		}
		out.GetObjectKind().SetGroupVersionKind(gvk)
		return out, nil
	default:
		return nil, runtime.NewNotRegisteredErrForType("memcluster", reflect.TypeOf(in))
	}
}

func (k kindConversions[T]) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (k kindConversions[T]) Default(runtime.Object) {}

func (k kindConversions[T]) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if !k.ours(gvk) {
		return nil, runtime.NewNotRegisteredErrForKind("memcluster", gvk)
	}
	obj := k.kind.New()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// withoutManagedFields converts objects without their managedFields.
// The field manager reads them from the object itself, and what it
// computes from the converted objects does not depend on them (it never
// records them as anyone's); converting them (each entry's fieldsV1 is
// JSON to parse) was the largest cost of recording a status write.
type withoutManagedFields struct{ tc managedfields.TypeConverter }

func (w withoutManagedFields) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if m, ok := obj.(metav1.Object); ok && len(m.GetManagedFields()) > 0 {
		if o, ok := obj.(Object); ok {
			c := shallowCopy(o)
			c.SetManagedFields(nil)
			obj = c
		}
	}
	return w.tc.ObjectToTyped(obj, opts...)
}

func (w withoutManagedFields) TypedToObject(tv *typed.TypedValue) (runtime.Object, error) {
	return w.tc.TypedToObject(tv)
}

// TypeConverterChain returns a type converter that gives each kind the
// type of the first of tcs that has one for it: for instance
// client-go's schemas for the built-in kinds, then
// managedfields.NewDeducedTypeConverter() for the rest, as
// controller-runtime's fake client does. A cluster asks once per kind,
// at its first write.
func TypeConverterChain(tcs ...managedfields.TypeConverter) managedfields.TypeConverter {
	return chain(tcs)
}

type chain []managedfields.TypeConverter

func (c chain) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	var errs []string
	for _, tc := range c {
		tv, err := tc.ObjectToTyped(obj, opts...)
		if err == nil {
			return tv, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, fmt.Errorf("no type converter has a type for %s: %s", obj.GetObjectKind().GroupVersionKind(), strings.Join(errs, "; "))
}

func (c chain) TypedToObject(tv *typed.TypedValue) (runtime.Object, error) {
	if len(c) == 0 {
		return nil, fmt.Errorf("no type converter")
	}
	return c[0].TypedToObject(tv)
}

// LazyTypeConverter returns a type converter that calls build at its
// first use, once: type information can take tens of milliseconds to
// parse (client-go's schemas for the built-in kinds do), which a cluster
// that never writes a tracked kind need not pay.
func LazyTypeConverter(build func() managedfields.TypeConverter) managedfields.TypeConverter {
	return &lazy{build: sync.OnceValue(build)}
}

type lazy struct {
	build func() managedfields.TypeConverter
}

func (l *lazy) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tc := l.build()
	if tc == nil {
		return nil, fmt.Errorf("the lazy type converter built nil")
	}
	return tc.ObjectToTyped(obj, opts...)
}

func (l *lazy) TypedToObject(tv *typed.TypedValue) (runtime.Object, error) {
	tc := l.build()
	if tc == nil {
		return nil, fmt.Errorf("the lazy type converter built nil")
	}
	return tc.TypedToObject(tv)
}

// typeConverterFor returns the converter that has a type for example (an
// empty object of a kind, with its apiVersion and kind): tc, or the first
// member of a chain that has one, so that a chain costs nothing per write.
func typeConverterFor(tc managedfields.TypeConverter, example runtime.Object) (managedfields.TypeConverter, error) {
	switch t := tc.(type) {
	case chain:
		var errs []string
		for _, m := range t {
			found, err := typeConverterFor(m, example)
			if err == nil {
				return found, nil
			}
			errs = append(errs, err.Error())
		}
		return nil, fmt.Errorf("none of its %d converters has one: %s", len(t), strings.Join(errs, "; "))
	case *lazy:
		built := t.build()
		if built == nil {
			return nil, fmt.Errorf("the lazy type converter built nil")
		}
		return typeConverterFor(built, example)
	}
	if _, err := tc.ObjectToTyped(example); err != nil {
		return nil, err
	}
	return tc, nil
}
