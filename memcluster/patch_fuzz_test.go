package memcluster

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// bigGrace is a terminationGracePeriodSeconds a float64 cannot hold.
const bigGrace = int64(1<<53 + 1)

// FuzzPatch applies arbitrary patches of the three types to a Deployment:
// they must not panic, a successful patch returns valid JSON, and a
// large integer the patch does not mention keeps its exact value.
func FuzzPatch(f *testing.F) {
	for _, seed := range []struct {
		kind  byte
		patch string
	}{
		{0, `{"spec":{"replicas":3}}`},
		{0, `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"x"}],"uid":"u"}}`},
		{0, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"v2"}]}}}}`},
		{0, `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"$patch":"delete","name":"app"}]}}}}`},
		{0, `{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]},"spec":{"$retainKeys":["replicas"]}}`},
		{1, `{"metadata":{"annotations":null},"spec":{"paused":true}}`},
		{1, `{"spec":{"template":null}}`},
		{2, `[{"op":"replace","path":"/spec/replicas","value":4}]`},
		{2, `[{"op":"copy","from":"/spec/template","path":"/spec/x"},{"op":"add","path":"/spec/template/metadata/labels/b","value":"c"}]`},
		{2, `[{"op":"move","from":"/spec/template/spec/terminationGracePeriodSeconds","path":"/spec/template/spec/activeDeadlineSeconds"}]`},
		{2, `[{"op":"test","path":"/spec/template/spec/terminationGracePeriodSeconds","value":9007199254740993}]`},
	} {
		f.Add(seed.kind, []byte(seed.patch))
	}
	d := deployment("web")
	grace := bigGrace
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = &grace
	d.Finalizers = []string{"a", "b"}
	doc, err := json.Marshal(d)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind byte, patch []byte) {
		var out []byte
		var err error
		switch kind % 3 {
		case 0:
			out, err = strategicMergePatch(doc, patch, reflect.TypeOf(&appsv1.Deployment{}))
		case 1:
			out, err = mergePatch(doc, patch)
		case 2:
			out, err = jsonPatch(doc, patch)
		}
		if err != nil {
			return
		}
		var got any
		if err := utiljson.Unmarshal(out, &got); err != nil {
			t.Fatalf("patch %q returned invalid JSON %q: %v", patch, out, err)
		}
		var p any
		if err := utiljson.Unmarshal(patch, &p); err != nil {
			t.Fatalf("a patch that is not JSON applied: %q", patch)
		}
		if mentions(p, "terminationGracePeriodSeconds") {
			return
		}
		if v, ok := lookup(got, "spec", "template", "spec", "terminationGracePeriodSeconds"); ok && v != any(bigGrace) {
			t.Fatalf("patch %q changed terminationGracePeriodSeconds %d to %v (%T)", patch, bigGrace, v, v)
		}
	})
}

// mentions reports whether key appears in v as an object key or inside a
// string (a JSON patch path).
func mentions(v any, key string) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, key) || mentions(e, key) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if mentions(e, key) {
				return true
			}
		}
	case string:
		return strings.Contains(v, key)
	}
	return false
}

// lookup walks objects by key.
func lookup(v any, path ...string) (any, bool) {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
