package rollout

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// catsTemplate loads testdata/hash_template.json with @@VERSION@@ = v.
func catsTemplate(t testing.TB, v int) *corev1.PodTemplateSpec {
	t.Helper()
	raw, err := os.ReadFile("testdata/hash_template.json")
	if err != nil {
		t.Fatal(err)
	}
	var tpl corev1.PodTemplateSpec
	if err := json.Unmarshal([]byte(strings.Replace(string(raw), "@@VERSION@@", strconv.Itoa(v), 1)), &tpl); err != nil {
		t.Fatal(err)
	}
	return &tpl
}

func TestComputeHash(t *testing.T) {
	simple := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"foo": "bar"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Image: "foo/bar"}}},
	}
	tests := []struct {
		name      string
		template  *corev1.PodTemplateSpec
		collision *int32
		want      string
	}{
		{"empty", &corev1.PodTemplateSpec{}, nil, "54f4c57dcb"},
		{"empty, collision 0", &corev1.PodTemplateSpec{}, ptr[int32](0), "98789f664"},
		{"empty, collision 1", &corev1.PodTemplateSpec{}, ptr[int32](1), "6554565b97"},
		{"empty, collision 2", &corev1.PodTemplateSpec{}, ptr[int32](2), "7bcbcd84db"},
		{"empty, collision MaxInt32", &corev1.PodTemplateSpec{}, ptr[int32](math.MaxInt32), "7d688c8ff6"},
		{"nil template hashes as empty", nil, nil, "54f4c57dcb"},
		{"simple", simple, nil, "5d94f67bbb"},
		{"simple, collision 1", simple, ptr[int32](1), "d57989fc5"},
		{"cats v0", catsTemplate(t, 0), nil, "77f9b8cdcd"},
		{"cats v1", catsTemplate(t, 1), nil, "79f7b6df5f"},
		{"cats v999", catsTemplate(t, 999), nil, "f9854d6c7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before *corev1.PodTemplateSpec
			if tc.template != nil {
				before = tc.template.DeepCopy()
			}
			if got := ComputeHash(tc.template, tc.collision); got != tc.want {
				t.Errorf("ComputeHash() = %q; want %q", got, tc.want)
			}
			if tc.template != nil {
				if diff := cmp.Diff(before, tc.template); diff != "" {
					t.Errorf("ComputeHash mutated its input (-before +after):\n%s", diff)
				}
			}
		})
	}
}

func TestReplicaSetName(t *testing.T) {
	long := strings.Repeat("x", 260)
	tests := []struct {
		name, deployment, hash, want string
	}{
		{"short", "web", "5d94f67bbb", "web-5d94f67bbb"},
		{"exactly fits", strings.Repeat("x", 242), "5d94f67bbb", strings.Repeat("x", 242) + "-5d94f67bbb"},
		{"truncated to 253", long, "5d94f67bbb", strings.Repeat("x", 242) + "-5d94f67bbb"},
		{"very long hash is never truncated", "web", strings.Repeat("h", 252), "web-" + strings.Repeat("h", 252)},
		{"hash leaving no room", long, strings.Repeat("h", 252), long + "-" + strings.Repeat("h", 252)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ReplicaSetName(tc.deployment, tc.hash)
			if got != tc.want {
				t.Errorf("ReplicaSetName() = %q (len %d); want %q", got, len(got), tc.want)
			}
		})
	}
}

func TestNewReplicaSet(t *testing.T) {
	d := deploy(10, "3", "2")
	d.Annotations = map[string]string{ChangeCauseAnnotation: "bump", RevisionAnnotation: "7"}
	d.Spec.MinReadySeconds = 5
	d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}}
	d.Status.CollisionCount = ptr[int32](1)
	before := d.DeepCopy()
	olds := []*appsv1.ReplicaSet{rs("old", 0, 10, rev("3")), rs("older", 0, 0, rev("2"))}

	got, err := NewReplicaSet(d, olds)
	if err != nil {
		t.Fatal(err)
	}
	hash := ComputeHash(&before.Spec.Template, ptr[int32](1))
	wantTpl := template("v2")
	wantTpl.Labels[HashLabel] = hash
	want := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-" + hash, Namespace: "ns",
			Labels: map[string]string{"app": "web", HashLabel: hash},
			Annotations: map[string]string{ChangeCauseAnnotation: "bump", RevisionAnnotation: "4",
				DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "13"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-uid",
				Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        ptr[int32](3),
			MinReadySeconds: 5,
			Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"app": "web", HashLabel: hash},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}},
			},
			Template: wantTpl,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewReplicaSet mismatch (-want +got):\n%s", diff)
	}
	unchanged(t, "deployment", before, d)
	got.Labels["x"] = "y"
	if _, ok := got.Spec.Template.Labels["x"]; ok {
		t.Error("object and template labels share a map")
	}

	noSurge := deploy(10, "", "2")
	if _, err := NewReplicaSet(noSurge, olds); !fatal(err) {
		t.Errorf("nil maxSurge: err = %v; want an upstream error", err)
	}
	if _, err := NewReplicaSet(nil, olds); err == nil {
		t.Error("nil deployment should fail")
	}
	bad := []*appsv1.ReplicaSet{rs("old", 0, 10, rev("zz"))}
	if r, err := NewReplicaSet(d, bad); r == nil || errKind(err) != "ignored" || r.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("unparseable old revision: rs=%v err=%v", r, err)
	}
	nilSel := d.DeepCopy()
	nilSel.Spec.Selector = nil
	if r, _ := NewReplicaSet(nilSel, olds); r == nil || r.Spec.Selector.MatchLabels[HashLabel] == "" {
		t.Error("nil selector should become the hash label alone")
	}
}

func TestHashCollision(t *testing.T) {
	d := deploy(1, "1", "0")
	mine, _ := NewReplicaSet(d, nil)
	if IsHashCollision(d, mine) {
		t.Error("own ReplicaSet reported as collision")
	}
	other := mine.DeepCopy()
	other.OwnerReferences[0].UID = "someone-else"
	differs := mine.DeepCopy()
	differs.Spec.Template.Spec.Containers[0].Image = "other"
	orphan := mine.DeepCopy()
	orphan.OwnerReferences = nil
	for _, c := range []*appsv1.ReplicaSet{other, differs, orphan, nil} {
		if !IsHashCollision(d, c) {
			t.Errorf("IsHashCollision(%v) = false; want true", c)
		}
	}
	st := BumpCollisionCount(d.Status)
	if st.CollisionCount == nil || *st.CollisionCount != 1 || d.Status.CollisionCount != nil {
		t.Errorf("BumpCollisionCount: got %v, input %v", st.CollisionCount, d.Status.CollisionCount)
	}
	if st2 := BumpCollisionCount(st); *st2.CollisionCount != 2 || *st.CollisionCount != 1 {
		t.Error("BumpCollisionCount must copy the pointer")
	}
}
