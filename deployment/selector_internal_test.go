package deployment

import (
	"math/rand/v2"
	"testing"

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
