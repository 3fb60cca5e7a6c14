package memcluster

import (
	"bytes"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// This file is the cheap road to the managedFields of an update (a
// create, an update, a status write): the same answer as the field
// manager's, computed from structured-merge-diff's comparison of the
// two objects (the library the field manager is built on), with the
// stored object's decoded field sets reused from its own write and the
// encoded sets of the managers the write does not touch kept as they
// are. The field manager itself decodes every entry, walks every set
// against the schema, validates both objects and encodes every entry
// again, on every write: most of a write's cost under -race.
//
// What an update does to the sets, as the field manager records it: the
// fields the write adds or changes (its comparison of the two objects,
// without the fields the write resets) leave every other manager's set,
// and so do the fields it removes; the writer's entry (by manager,
// operation Update, apiVersion and subresource) gains the added and
// changed fields but the object's identity (name, uid, …), with the
// time of the write, when there are any; empty entries go.
//
// An update of an object without managedFields records none (only a
// create starts them).
//
// Anything else takes the field manager's road: applies, the scale
// subresource, entries of another apiVersion or not in FieldsV1, a
// request that sends managedFields other than the stored ones, an
// object with ten or more writers by update (the field manager then
// merges the oldest), a type error.

// fastRecorder computes the managedFields of one kind's updates through
// one subresource.
type fastRecorder struct {
	tc          managedfields.TypeConverter
	version     string
	subresource string
	// reset is the filter of the fields the write resets, nil if none.
	reset fieldpath.Filter
}

// identityFields are the fields the field manager never records as a
// writer's: the object's type and identity.
var identityFields = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// maxUpdateManagers is the number of update entries above which the
// field manager merges the oldest into one.
const maxUpdateManagers = 10

// decodedFields is an object's managedFields with their field sets
// parsed: entries is the stored slice they were parsed from (its
// identity says whether they still are the object's).
type decodedFields struct {
	entries []metav1.ManagedFieldsEntry
	sets    []*fieldpath.Set
}

// sameSlice reports whether a and b are the same slice (same array,
// same length).
func sameSlice(a, b []metav1.ManagedFieldsEntry) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// decodedLocked returns the parsed sets of entries, the managedFields of
// the stored object at key (or of a new one), from the cache when they
// are the ones it parsed last.
func (r *Resource[T]) decodedLocked(key types.NamespacedName, entries []metav1.ManagedFieldsEntry) ([]*fieldpath.Set, bool) {
	if d, ok := r.decoded[key]; ok && sameSlice(d.entries, entries) {
		return d.sets, true
	}
	sets := make([]*fieldpath.Set, len(entries))
	for i, e := range entries {
		if e.FieldsType != "FieldsV1" || e.FieldsV1 == nil {
			return nil, false
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return nil, false
		}
		sets[i] = s
	}
	return sets, true
}

// rememberLocked caches the parsed sets of entries, the managedFields
// just recorded for the object at key.
func (r *Resource[T]) rememberLocked(key types.NamespacedName, entries []metav1.ManagedFieldsEntry, sets []*fieldpath.Set) {
	if r.decoded == nil {
		r.decoded = map[types.NamespacedName]decodedFields{}
	}
	if len(entries) == 0 {
		delete(r.decoded, key)
		return
	}
	r.decoded[key] = decodedFields{entries: entries, sets: sets}
}

// entryKey is what tells two writers' entries apart.
type entryKey struct {
	manager, apiVersion, subresource string
	operation                        metav1.ManagedFieldsOperationType
}

func keyOf(e *metav1.ManagedFieldsEntry) entryKey {
	k := entryKey{manager: e.Manager, apiVersion: e.APIVersion, subresource: e.Subresource, operation: e.Operation}
	if e.Operation == metav1.ManagedFieldsOperationApply {
		k.apiVersion = "" // an applier is one manager whatever the version it applies
	}
	return k
}

// fastUpdateLocked returns the managedFields of obj (a tracking view of
// the object written, see [Resource.forTracking]) replacing live by
// manager, and their parsed sets; ok is false when the field manager
// must decide (see the top of this file). now is the time of the write.
func (r *Resource[T]) fastUpdateLocked(f *fastRecorder, live, obj T, manager string, now metav1.Time) (entries []metav1.ManagedFieldsEntry, sets []*fieldpath.Set, ok bool) {
	liveEntries := live.GetManagedFields()
	liveSets, ok := r.decodedLocked(objectKey(live), liveEntries)
	if !ok {
		return nil, nil, false
	}
	if sent := obj.GetManagedFields(); f.subresource == "" && sent != nil && !sameSlice(sent, liveEntries) {
		if !semanticEqual(sent, liveEntries) {
			return nil, nil, false // the request sets managedFields itself
		}
		// The field manager starts from the request's entries, which are
		// the stored ones (their times may differ in location only).
		liveEntries = sent
	}
	if len(liveEntries) == 0 && live.GetUID() != "" {
		// An object without managedFields stays without: only a create
		// starts tracking.
		return nil, nil, true
	}
	updates := 0
	seen := make(map[entryKey]bool, len(liveEntries))
	for i := range liveEntries {
		e := &liveEntries[i]
		k := keyOf(e)
		if e.APIVersion != f.version || seen[k] ||
			e.Operation != metav1.ManagedFieldsOperationApply && e.Operation != metav1.ManagedFieldsOperationUpdate {
			return nil, nil, false
		}
		seen[k] = true
		if e.Operation == metav1.ManagedFieldsOperationUpdate {
			updates++
		}
	}
	if _, ok := any(live).(*unstructured.Unstructured); !ok {
		// live and obj are private shallow copies (the views of
		// recordUpdate): the type converter would copy each again to
		// leave out their managedFields (see withoutManagedFields), so they
		// go here, and come back for the field manager's road.
		liveMF, objMF := live.GetManagedFields(), obj.GetManagedFields()
		live.SetManagedFields(nil)
		obj.SetManagedFields(nil)
		defer func() {
			live.SetManagedFields(liveMF)
			obj.SetManagedFields(objMF)
		}()
	}
	liveTyped, err := f.tc.ObjectToTyped(live, typed.AllowDuplicates)
	if err != nil {
		return nil, nil, false
	}
	newTyped, err := f.tc.ObjectToTyped(obj, typed.AllowDuplicates)
	if err != nil {
		return nil, nil, false
	}
	cmp, err := liveTyped.Compare(newTyped)
	if err != nil {
		return nil, nil, false
	}
	if f.reset != nil {
		cmp = cmp.FilterFields(f.reset)
	}
	changed := cmp.Modified.Union(cmp.Added)
	taken := changed.Union(cmp.Removed)
	gained := changed.Difference(identityFields)
	if f.reset != nil {
		gained = f.reset.Filter(gained)
	}
	self := entryKey{manager: manager, apiVersion: f.version, subresource: f.subresource, operation: metav1.ManagedFieldsOperationUpdate}
	entries = make([]metav1.ManagedFieldsEntry, 0, len(liveEntries)+1)
	sets = make([]*fieldpath.Set, 0, len(liveEntries)+1)
	found := false
	for i := range liveEntries {
		e, set := liveEntries[i], liveSets[i]
		if !taken.Empty() {
			if rest := set.Difference(taken); !rest.Equals(set) {
				set = rest
				e.FieldsV1 = nil // to encode
			}
		}
		if keyOf(&e) == self {
			found = true
			if !gained.Empty() {
				set = set.Union(gained)
				e.FieldsV1, e.Time = nil, &now
			}
		}
		if set.Empty() {
			continue
		}
		entries, sets = append(entries, e), append(sets, set)
	}
	if !found && !gained.Empty() {
		entries = append(entries, metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: f.version, Time: &now, FieldsType: "FieldsV1", Subresource: f.subresource})
		sets = append(sets, gained)
		updates++
	}
	if updates > maxUpdateManagers {
		return nil, nil, false
	}
	for i := range entries {
		if entries[i].FieldsV1 != nil {
			continue
		}
		raw, err := sets[i].ToJSON()
		if err != nil {
			return nil, nil, false
		}
		entries[i].FieldsV1 = &metav1.FieldsV1{Raw: raw}
	}
	if len(entries) == 0 {
		return nil, nil, true
	}
	sortedEntries := make([]metav1.ManagedFieldsEntry, len(entries))
	copy(sortedEntries, entries)
	sortManagedFields(sortedEntries)
	sortedSets := make([]*fieldpath.Set, len(entries))
	for i := range sortedEntries {
		for j := range entries {
			if keyOf(&entries[j]) == keyOf(&sortedEntries[i]) {
				sortedSets[i] = sets[j]
			}
		}
	}
	return sortedEntries, sortedSets, true
}

// managedFieldsDiff describes how fast, the cheap road's entries of an
// update of gvk by manager, differ from slow, the field manager's, or
// returns "" if they do not. Times are compared as instants (their
// location is not encoded).
func managedFieldsDiff(gvk fmt.Stringer, manager string, fast, slow []metav1.ManagedFieldsEntry) string {
	same := len(fast) == len(slow)
	for i := 0; same && i < len(fast); i++ {
		p, q := fast[i], slow[i]
		same = (p.Time == nil) == (q.Time == nil) && (p.Time == nil || p.Time.Equal(q.Time))
		p.Time, q.Time = nil, nil
		same = same && reflect.DeepEqual(p, q)
	}
	if same {
		return ""
	}
	return fmt.Sprintf("memcluster: the managedFields of an update of %s by %q differ from the field manager's:\ncheap: %s\nfield manager: %s",
		gvk, manager, entriesString(fast), entriesString(slow))
}

func entriesString(entries []metav1.ManagedFieldsEntry) string {
	var b bytes.Buffer
	for _, e := range entries {
		t := "<nil>"
		if e.Time != nil {
			t = e.Time.UTC().String()
		}
		raw := "<nil>"
		if e.FieldsV1 != nil {
			raw = string(e.FieldsV1.Raw)
		}
		fmt.Fprintf(&b, "\n  {%s %s %s %s %s %s %s}", e.Manager, e.Operation, e.APIVersion, e.Subresource, t, e.FieldsType, raw)
	}
	return b.String()
}
