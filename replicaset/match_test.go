package replicaset_test

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

func asSelector(t *testing.T, s *metav1.LabelSelector) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatalf("LabelSelectorAsSelector(%v): %v", s, err)
	}
	return sel
}

func parsed(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("labels.Parse(%q): %v", s, err)
	}
	return sel
}

func expr(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func exprs(rs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: rs}
}

type lbl = map[string]string

func TestMatchCompiled(t *testing.T) {
	appWeb := &metav1.LabelSelector{MatchLabels: lbl{"app": "web"}}
	cases := []struct {
		name   string
		sel    labels.Selector
		labels map[string]string
		want   bool
	}{
		{name: "nil selector matches nothing", sel: asSelector(t, nil), labels: lbl{"app": "web"}, want: false},
		{name: "nil selector, nil labels", sel: asSelector(t, nil), labels: nil, want: false},
		{name: "empty selector matches nil labels", sel: asSelector(t, &metav1.LabelSelector{}), labels: nil, want: true},
		{name: "empty selector matches anything", sel: asSelector(t, &metav1.LabelSelector{}), labels: lbl{"a": "1"}, want: true},
		{name: "matchLabels equal", sel: asSelector(t, appWeb), labels: lbl{"app": "web", "x": "y"}, want: true},
		{name: "matchLabels other value", sel: asSelector(t, appWeb), labels: lbl{"app": "db"}, want: false},
		{name: "matchLabels, nil labels", sel: asSelector(t, appWeb), labels: nil, want: false},
		{name: "matchLabels, empty value present", sel: asSelector(t, &metav1.LabelSelector{MatchLabels: lbl{"k": ""}}), labels: lbl{"k": ""}, want: true},
		{name: "matchLabels, empty value absent", sel: asSelector(t, &metav1.LabelSelector{MatchLabels: lbl{"k": ""}}), labels: nil, want: false},
		{name: "In, second value", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpIn, "a", "b"))), labels: lbl{"k": "b"}, want: true},
		{name: "In, other value", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpIn, "a", "b"))), labels: lbl{"k": "c"}, want: false},
		{name: "In, absent", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpIn, "a"))), labels: nil, want: false},
		{name: "NotIn, absent", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpNotIn, "a"))), labels: nil, want: true},
		{name: "NotIn, other value", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpNotIn, "a"))), labels: lbl{"k": "b"}, want: true},
		{name: "NotIn, listed value", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpNotIn, "a", "b"))), labels: lbl{"k": "b"}, want: false},
		{name: "Exists, empty value", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpExists))), labels: lbl{"k": ""}, want: true},
		{name: "Exists, absent", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpExists))), labels: nil, want: false},
		{name: "DoesNotExist, absent", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpDoesNotExist))), labels: nil, want: true},
		{name: "DoesNotExist, empty value", sel: asSelector(t, exprs(expr("k", metav1.LabelSelectorOpDoesNotExist))), labels: lbl{"k": ""}, want: false},
		{
			name: "matchLabels and a contradicting expression",
			sel: asSelector(t, &metav1.LabelSelector{MatchLabels: lbl{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{expr("app", metav1.LabelSelectorOpNotIn, "web")}}),
			labels: lbl{"app": "web"}, want: false,
		},
		{name: "parsed !=, absent", sel: parsed(t, "a!=1"), labels: nil, want: true},
		{name: "parsed !=, equal", sel: parsed(t, "a!=1"), labels: lbl{"a": "1"}, want: false},
		{name: "parsed ==", sel: parsed(t, "a==1"), labels: lbl{"a": "1"}, want: true},
		{name: "parsed >, greater", sel: parsed(t, "a>1"), labels: lbl{"a": "2"}, want: true},
		{name: "parsed >, equal", sel: parsed(t, "a>1"), labels: lbl{"a": "1"}, want: false},
		{name: "parsed >, not a number", sel: parsed(t, "a>1"), labels: lbl{"a": "x"}, want: false},
		{name: "parsed > with =", sel: parsed(t, "a>1,b=2"), labels: lbl{"a": "5", "b": "2"}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sel.Matches(labels.Set(tc.labels)); got != tc.want {
				t.Fatalf("bad case: %v.Matches(%v) = %v; want %v", tc.sel, tc.labels, got, tc.want)
			}
			if got := replicaset.MatchCompiled(tc.sel, tc.labels); got != tc.want {
				t.Errorf("MatchCompiled(%v, %v) = %v; want %v", tc.sel, tc.labels, got, tc.want)
			}
		})
	}
}

func TestClassifyLabels(t *testing.T) {
	type result struct{ Match, Labeled, Implied bool }
	appWeb := lbl{"app": "web"}
	cases := []struct {
		name   string
		sel    *metav1.LabelSelector
		tpl    map[string]string
		labels map[string]string
		want   result
	}{{
		name:   "selector is the template",
		sel:    &metav1.LabelSelector{MatchLabels: lbl{"app": "web", "hash": "h1"}},
		tpl:    lbl{"app": "web", "hash": "h1"},
		labels: lbl{"app": "web", "hash": "h1", "extra": "x"},
		want:   result{Match: true, Labeled: true, Implied: true},
	}, {
		name:   "matching pod without every template label",
		sel:    &metav1.LabelSelector{MatchLabels: appWeb},
		tpl:    lbl{"app": "web", "tier": "fe"},
		labels: appWeb,
		want:   result{Match: true, Labeled: false, Implied: true},
	}, {
		name:   "fully labeled but NotIn excludes it",
		sel:    &metav1.LabelSelector{MatchLabels: appWeb, MatchExpressions: []metav1.LabelSelectorRequirement{expr("track", metav1.LabelSelectorOpNotIn, "canary")}},
		tpl:    appWeb,
		labels: lbl{"app": "web", "track": "canary"},
		want:   result{Match: false, Labeled: true, Implied: false},
	}, {
		name:   "NotIn settled by the template",
		sel:    exprs(expr("tier", metav1.LabelSelectorOpNotIn, "db")),
		tpl:    lbl{"app": "web", "tier": "fe"},
		labels: lbl{"app": "web", "tier": "fe"},
		want:   result{Match: true, Labeled: true, Implied: true},
	}, {
		name:   "fully labeled but DoesNotExist excludes it",
		sel:    &metav1.LabelSelector{MatchLabels: appWeb, MatchExpressions: []metav1.LabelSelectorRequirement{expr("canary", metav1.LabelSelectorOpDoesNotExist)}},
		tpl:    appWeb,
		labels: lbl{"app": "web", "canary": "yes"},
		want:   result{Match: false, Labeled: true, Implied: false},
	}, {
		name:   "DoesNotExist on a template key",
		sel:    exprs(expr("canary", metav1.LabelSelectorOpDoesNotExist)),
		tpl:    lbl{"canary": "yes"},
		labels: lbl{"canary": "yes"},
		want:   result{Match: false, Labeled: true, Implied: false},
	}, {
		name:   "Exists settled by the template",
		sel:    exprs(expr("app", metav1.LabelSelectorOpExists)),
		tpl:    appWeb,
		labels: appWeb,
		want:   result{Match: true, Labeled: true, Implied: true},
	}, {
		name:   "Exists on a key the template lacks",
		sel:    exprs(expr("zone", metav1.LabelSelectorOpExists)),
		tpl:    appWeb,
		labels: lbl{"app": "web", "zone": "a"},
		want:   result{Match: true, Labeled: true, Implied: false},
	}, {
		name:   "In holding the template value",
		sel:    exprs(expr("env", metav1.LabelSelectorOpIn, "prod", "staging")),
		tpl:    lbl{"env": "staging"},
		labels: lbl{"env": "staging"},
		want:   result{Match: true, Labeled: true, Implied: true},
	}, {
		name:   "In without the template value",
		sel:    exprs(expr("env", metav1.LabelSelectorOpIn, "prod")),
		tpl:    lbl{"env": "dev"},
		labels: lbl{"env": "dev"},
		want:   result{Match: false, Labeled: true, Implied: false},
	}, {
		name:   "nil selector",
		sel:    nil,
		tpl:    appWeb,
		labels: appWeb,
		want:   result{Match: false, Labeled: true, Implied: false},
	}, {
		name:   "empty selector, no template labels, nil pod labels",
		sel:    &metav1.LabelSelector{},
		tpl:    nil,
		labels: nil,
		want:   result{Match: true, Labeled: true, Implied: true},
	}, {
		name:   "nil pod labels",
		sel:    &metav1.LabelSelector{MatchLabels: appWeb},
		tpl:    appWeb,
		labels: nil,
		want:   result{Match: false, Labeled: false, Implied: true},
	}, {
		name:   "more than eight template labels",
		sel:    &metav1.LabelSelector{MatchLabels: appWeb},
		tpl:    lbl{"app": "web", "a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8"},
		labels: lbl{"app": "web", "a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7"},
		want:   result{Match: true, Labeled: false, Implied: true},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got result
			got.Match, got.Labeled, got.Implied = replicaset.ClassifyLabels(asSelector(t, tc.sel), tc.tpl, tc.labels)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ClassifyLabels(%v, %v, %v) mismatch (-want +got):\n%s", tc.sel, tc.tpl, tc.labels, diff)
			}
		})
	}
}

// TestClassifyLabelsAgainstReference checks the compiled matcher against
// labels.Selector.Matches and a naive subset test on random selectors,
// templates and pod labels, and that a selector judged settled by the
// template does match every superset of it.
func TestClassifyLabelsAgainstReference(t *testing.T) {
	keys := []string{"a", "b", "c"}
	vals := []string{"1", "2", "3"}
	ops := []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist}
	r := rand.New(rand.NewPCG(1, 2))
	randLabels := func() map[string]string {
		if r.IntN(8) == 0 {
			return nil
		}
		m := map[string]string{}
		for _, k := range keys {
			if r.IntN(2) == 0 {
				m[k] = vals[r.IntN(len(vals))]
			}
		}
		return m
	}
	// superset returns base plus random labels on keys base lacks.
	superset := func(base map[string]string) map[string]string {
		m := maps.Clone(base)
		for _, k := range append(keys, "d") {
			if _, ok := base[k]; !ok && r.IntN(2) == 0 {
				if m == nil {
					m = map[string]string{}
				}
				m[k] = vals[r.IntN(len(vals))]
			}
		}
		return m
	}
	randSelector := func() *metav1.LabelSelector {
		switch r.IntN(10) {
		case 0:
			return nil
		case 1:
			return &metav1.LabelSelector{}
		}
		s := &metav1.LabelSelector{}
		if r.IntN(2) == 0 {
			s.MatchLabels = randLabels()
		}
		for range r.IntN(3) {
			e := expr(keys[r.IntN(len(keys))], ops[r.IntN(len(ops))])
			if e.Operator == metav1.LabelSelectorOpIn || e.Operator == metav1.LabelSelectorOpNotIn {
				for range 1 + r.IntN(2) {
					e.Values = append(e.Values, vals[r.IntN(len(vals))])
				}
			}
			s.MatchExpressions = append(s.MatchExpressions, e)
		}
		return s
	}
	subset := func(want, got map[string]string) bool {
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				return false
			}
		}
		return true
	}
	var implied, labeledNotMatching int
	for range 20000 {
		src, tpl := randSelector(), randLabels()
		sel := asSelector(t, src)
		l := randLabels()
		if r.IntN(2) == 0 {
			l = superset(tpl)
		}
		match, labeled, impl := replicaset.ClassifyLabels(sel, tpl, l)
		if want := sel.Matches(labels.Set(l)); match != want {
			t.Fatalf("ClassifyLabels(%v, %v, %v): match = %v; want %v", src, tpl, l, match, want)
		}
		if want := subset(tpl, l); labeled != want {
			t.Fatalf("ClassifyLabels(%v, %v, %v): labeled = %v; want %v", src, tpl, l, labeled, want)
		}
		if got := replicaset.MatchCompiled(sel, l); got != match {
			t.Fatalf("MatchCompiled(%v, %v) = %v; want %v", src, l, got, match)
		}
		if labeled && !match {
			labeledNotMatching++
		}
		if !impl {
			continue
		}
		implied++
		for range 4 {
			if sup := superset(tpl); !sel.Matches(labels.Set(sup)) {
				t.Fatalf("selector %v judged settled by template %v, but does not match its superset %v", src, tpl, sup)
			}
		}
	}
	// The generator must reach both paths of the shortcut.
	if implied < 1000 || labeledNotMatching < 1000 {
		t.Errorf("weak generator: %d settled selectors, %d fully labeled non-matching pods", implied, labeledNotMatching)
	}
}

// TestReconcileSelectorExpressions syncs a ReplicaSet whose selector is
// not its template labels: claiming follows the selector, and
// FullyLabeledReplicas the template.
func TestReconcileSelectorExpressions(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 3, func(rs *appsv1.ReplicaSet) {
		rs.Spec.Selector = &metav1.LabelSelector{
			MatchLabels:      lbl{"app": "web"},
			MatchExpressions: []metav1.LabelSelectorRequirement{expr("track", metav1.LabelSelectorOpNotIn, "canary")},
		}
		rs.Spec.Template.Labels = lbl{"app": "web", "tier": "fe"}
	}))
	for _, p := range []*corev1.Pod{
		newPod("mine", ownedBy(rs)),
		newPod("partial", ownedBy(rs), withLabels(lbl{"app": "web"})),
		newPod("strayed", ownedBy(rs), withLabels(lbl{"app": "web", "tier": "fe", "track": "canary"})),
		newPod("orphan", withLabels(lbl{"app": "web", "track": "stable"})),
		newPod("orphan-canary", withLabels(lbl{"app": "web", "tier": "fe", "track": "canary"})),
	} {
		w.addPod(p)
	}
	r := newReconciler(t, w, true)
	if _, err := syncKey(t, r, "web"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mine", "orphan", "partial"}, activeOwned(w, rs)); diff != "" {
		t.Errorf("owned pods mismatch (-want +got):\n%s", diff)
	}
	want := appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 1, ObservedGeneration: 1, TerminatingReplicas: ptr32(0)}
	if diff := cmp.Diff(want, w.rs(key("web")).Status); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
}
