package rollout

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEqualIgnoreHash(t *testing.T) {
	withHash := template("v1")
	withHash.Labels = map[string]string{"app": "web", HashLabel: "abc"}
	noLabels := template("v1")
	noLabels.Labels = nil
	onlyHash := template("v1")
	onlyHash.Labels = map[string]string{HashLabel: "abc"}
	emptyLabels := template("v1")
	emptyLabels.Labels = map[string]string{}
	v1, v2 := template("v1"), template("v2")
	otherLabel := template("v1")
	otherLabel.Labels = map[string]string{"app": "db", HashLabel: "abc"}
	moreLabels := template("v1")
	moreLabels.Labels = map[string]string{"app": "web", "tier": "front"}
	annotated := template("v1")
	annotated.Annotations = map[string]string{"note": "x"}
	cpu := func(q string) corev1.PodTemplateSpec {
		t := template("v1")
		t.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
		return t
	}
	oneCPU, thousandMilli, twoCPU := cpu("1"), cpu("1000m"), cpu("2")
	tests := []struct {
		name   string
		t1, t2 *corev1.PodTemplateSpec
		want   bool
	}{
		{"same", &v1, ptr(template("v1")), true},
		{"hash label ignored", &v1, &withHash, true},
		{"different image", &v1, &v2, false},
		{"nil labels vs only a hash label (semantic: empty == nil)", &noLabels, &onlyHash, true},
		{"nil vs empty labels", &noLabels, &emptyLabels, true},
		{"another label value", &withHash, &otherLabel, false},
		{"one more label", &v1, &moreLabels, false},
		{"one more label, either way", &moreLabels, &withHash, false},
		{"an annotation", &v1, &annotated, false},
		{"quantities equal semantically, not exactly", &oneCPU, &thousandMilli, true},
		{"quantities different", &oneCPU, &twoCPU, false},
		{"both nil", nil, nil, true},
		{"one nil", &v1, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b1, b2 *corev1.PodTemplateSpec
			if tc.t1 != nil {
				b1 = tc.t1.DeepCopy()
			}
			if tc.t2 != nil {
				b2 = tc.t2.DeepCopy()
			}
			if got := EqualIgnoreHash(tc.t1, tc.t2); got != tc.want {
				t.Errorf("EqualIgnoreHash() = %v; want %v", got, tc.want)
			}
			unchanged(t, "t1", b1, tc.t1)
			unchanged(t, "t2", b2, tc.t2)
		})
	}
}

func TestFindNewAndOld(t *testing.T) {
	d := deploy(3, "1", "0")
	newer := rs("newer", 5, 1, tpl("v2"))
	older := rs("older", 2, 1, tpl("v2"))
	old1 := rs("old1", 0, 2)
	old0 := rs("old0", 1, 0)
	input := []*appsv1.ReplicaSet{newer, old0, nil, older, old1}
	order := names(input)

	if got := FindNewReplicaSet(d, input); got != older {
		t.Errorf("FindNewReplicaSet() = %s; want the oldest match", name(got))
	}
	active, all := FindOldReplicaSets(d, input)
	if diff := cmp.Diff([][]string{{"old1", "newer"}, {"old1", "old0", "newer"}}, [][]string{names(active), names(all)}); diff != "" {
		t.Errorf("FindOldReplicaSets mismatch (-want +got):\n%s", diff)
	}
	unchanged(t, "input order", order, names(input))
	if FindNewReplicaSet(d, []*appsv1.ReplicaSet{old1}) != nil || FindNewReplicaSet(nil, input) != nil {
		t.Error("no match should be nil")
	}
}

func TestFindActiveOrLatest(t *testing.T) {
	a, b, c := rs("a", 0, 0), rs("b", 1, 0), rs("c", 2, 0)
	act := rs("act", 3, 2)
	tests := []struct {
		name  string
		newRS *appsv1.ReplicaSet
		old   []*appsv1.ReplicaSet
		want  string
	}{
		{"nothing", nil, nil, ""},
		{"none active: new", rs("n", 9, 0), []*appsv1.ReplicaSet{a, b}, "n"},
		{"none active, no new: newest old", nil, []*appsv1.ReplicaSet{b, c, a}, "c"},
		{"one active old", rs("n", 9, 0), []*appsv1.ReplicaSet{a, act}, "act"},
		{"one active new", rs("n", 9, 1), []*appsv1.ReplicaSet{a}, "n"},
		{"two active", rs("n", 9, 1), []*appsv1.ReplicaSet{act}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			order := names(tc.old)
			if got := name(FindActiveOrLatest(tc.newRS, tc.old)); got != tc.want && !(got == "" && tc.want == "") {
				t.Errorf("FindActiveOrLatest() = %q; want %q", got, tc.want)
			}
			unchanged(t, "order", order, names(tc.old))
		})
	}
}

func TestOrders(t *testing.T) {
	a := rs("a", 0, 3, rev("2"))
	b := rs("b", 0, 3, rev("1"))
	c := rs("c", 1, 3, rev("3"))
	d := rs("d", 2, 5)
	in := []*appsv1.ReplicaSet{c, d, b, a}
	order := names(in)
	tests := []struct {
		name string
		sort func([]*appsv1.ReplicaSet) []*appsv1.ReplicaSet
		want []string
	}{
		{"creation, name tie-break", SortByCreationTimestamp, []string{"a", "b", "c", "d"}},
		{"size, older first", SortBySizeOlder, []string{"d", "a", "b", "c"}},
		{"size, newer first", SortBySizeNewer, []string{"d", "c", "b", "a"}},
		{"revision, missing is 0", SortByRevision, []string{"d", "b", "a", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(tc.sort(in))); diff != "" {
				t.Errorf("order mismatch (-want +got):\n%s", diff)
			}
			unchanged(t, "input order", order, names(in))
		})
	}
	if got := SortByCreationTimestamp([]*appsv1.ReplicaSet{a, nil}); got[0] != nil {
		t.Error("nil should sort as the zero ReplicaSet, first")
	}
}

func TestSetFromReplicaSetTemplate(t *testing.T) {
	d := deploy(1, "1", "0")
	tplWithHash := template("v9")
	tplWithHash.Labels[HashLabel] = "h"
	got := SetFromReplicaSetTemplate(d, tplWithHash)
	want := template("v9")
	if diff := cmp.Diff(want, got.Spec.Template); diff != "" {
		t.Errorf("template mismatch (-want +got):\n%s", diff)
	}
	if tplWithHash.Labels[HashLabel] != "h" || d.Spec.Template.Spec.Containers[0].Image != "web:v2" {
		t.Error("inputs mutated")
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
