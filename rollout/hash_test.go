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
	"k8s.io/apimachinery/pkg/util/intstr"
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

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

var _ = appsv1.ReplicaSet{}
var _ = intstr.FromInt32
