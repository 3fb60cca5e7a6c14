package deployment

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The in-place selector agrees with metav1.LabelSelectorAsSelector on
// random selectors and label sets: the same matches, and an error exactly
// when it errs.
func TestSelectorAgreesWithLabelSelectorAsSelector(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	keys := []string{"app", "tier", "example.com/team", "a.b-c_d", "Ab", "-bad", "bad-", "x/y/z", "UPPER.com/k", "a..b/k", "", "k" + string(make([]byte, 70))}
	vals := []string{"web", "", "db", "v1.2", "-x", "x_", "a b", "ok-1"}
	ops := []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist, "Gt", "bogus"}
	pickVals := func() []string {
		var out []string
		for range r.IntN(3) {
			out = append(out, vals[r.IntN(len(vals))])
		}
		return out
	}
	for i := range 20000 {
		var ps *metav1.LabelSelector
		if r.IntN(20) != 0 {
			ps = &metav1.LabelSelector{}
			if r.IntN(3) != 0 {
				ps.MatchLabels = map[string]string{}
				for range r.IntN(3) {
					ps.MatchLabels[keys[r.IntN(len(keys))]] = vals[r.IntN(len(vals))]
				}
			}
			for range r.IntN(3) {
				ps.MatchExpressions = append(ps.MatchExpressions, metav1.LabelSelectorRequirement{
					Key: keys[r.IntN(len(keys))], Operator: ops[r.IntN(len(ops))], Values: pickVals()})
			}
		}
		l := map[string]string{}
		for range r.IntN(4) {
			l[keys[r.IntN(len(keys))]] = vals[r.IntN(len(vals))]
		}
		want, wantErr := metav1.LabelSelectorAsSelector(ps)
		got, err := newSelector(ps)
		// An error is LabelSelectorAsSelector's own (the slow path), whose
		// text depends on map order: compare presence.
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("case %d: %+v: error %v; want %v", i, ps, err, wantErr)
		}
		if err != nil {
			continue
		}
		if g, w := got.matches(l), want.Matches(labels.Set(l)); g != w {
			t.Fatalf("case %d: %+v matches %v = %v; want %v", i, ps, l, g, w)
		}
	}
}

func TestSelectorAllocations(t *testing.T) {
	ps := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "example.com/tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"fe", "be"}}}}
	l := map[string]string{"app": "web", "example.com/tier": "fe"}
	if n := testing.AllocsPerRun(100, func() {
		s, err := newSelector(ps)
		if err != nil || !s.matches(l) {
			t.Fatal("no match")
		}
	}); n != 0 {
		t.Errorf("%v allocations per parse and match; want 0", n)
	}
}

// metaEqualExceptLabels compares ObjectMeta field by field; a field added
// to ObjectMeta must be added there too.
func TestObjectMetaFields(t *testing.T) {
	if n := reflect.TypeFor[metav1.ObjectMeta]().NumField(); n != 15 {
		t.Errorf("metav1.ObjectMeta has %d fields; metaEqualExceptLabels compares 15", n)
	}
}

// metaEqualExceptLabels agrees with reflect.DeepEqual on copies without
// labels, over ObjectMetas that differ in one field at a time.
func TestMetaEqualExceptLabels(t *testing.T) {
	ts := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	grace := int64(30)
	base := metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "1"}, Annotations: map[string]string{"k": "v"}, CreationTimestamp: ts}
	edits := []func(m *metav1.ObjectMeta){
		func(m *metav1.ObjectMeta) {},
		func(m *metav1.ObjectMeta) { m.Labels = nil },
		func(m *metav1.ObjectMeta) { m.Name = "b" },
		func(m *metav1.ObjectMeta) { m.GenerateName = "g" },
		func(m *metav1.ObjectMeta) { m.Namespace = "n" },
		func(m *metav1.ObjectMeta) { m.SelfLink = "s" },
		func(m *metav1.ObjectMeta) { m.UID = "u" },
		func(m *metav1.ObjectMeta) { m.ResourceVersion = "9" },
		func(m *metav1.ObjectMeta) { m.Generation = 2 },
		func(m *metav1.ObjectMeta) { m.CreationTimestamp = metav1.Time{} },
		func(m *metav1.ObjectMeta) { m.DeletionTimestamp = &ts },
		func(m *metav1.ObjectMeta) { m.DeletionGracePeriodSeconds = &grace },
		func(m *metav1.ObjectMeta) { m.Annotations = nil },
		func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{} },
		func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{"k": "w"} },
		func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{} },
		func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{{Name: "o"}} },
		func(m *metav1.ObjectMeta) { m.Finalizers = []string{} },
		func(m *metav1.ObjectMeta) { m.Finalizers = []string{"f"} },
		func(m *metav1.ObjectMeta) { m.ManagedFields = []metav1.ManagedFieldsEntry{} },
		func(m *metav1.ObjectMeta) { m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}} },
	}
	for i, ea := range edits {
		for j, eb := range edits {
			a, b := *base.DeepCopy(), *base.DeepCopy()
			ea(&a)
			eb(&b)
			ca, cb := a, b
			ca.Labels, cb.Labels = nil, nil
			if got, want := metaEqualExceptLabels(&a, &b), reflect.DeepEqual(ca, cb); got != want {
				t.Errorf("edits %d and %d: metaEqualExceptLabels = %v; reflect.DeepEqual = %v", i, j, got, want)
			}
		}
	}
}
