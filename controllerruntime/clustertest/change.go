package clustertest

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxChanges bounds the changes describeChange lists.
const maxChanges = 6

// describeChange says what a write changed in an object, in a few words
// per field: "annotation deployment.kubernetes.io/revision removed,
// spec.replicas 3 → 5". A nil old is a creation, a nil new a deletion.
// Fields the server owns (resourceVersion, managedFields, generation) are
// left out.
func describeChange(old, new runtime.Object) string {
	switch {
	case old == nil && new == nil:
		return ""
	case old == nil:
		return "created"
	case new == nil:
		return "deleted"
	}
	a, err := toMap(old)
	if err != nil {
		return ""
	}
	b, err := toMap(new)
	if err != nil {
		return ""
	}
	var out []string
	diffValue("", a, b, &out)
	if len(out) == 0 {
		return "no change"
	}
	if len(out) > maxChanges {
		out = append(out[:maxChanges], fmt.Sprintf("%d more changes", len(out)-maxChanges))
	}
	return strings.Join(out, ", ")
}

func toMap(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// ignored are the fields a write's description leaves out.
var ignored = map[string]bool{
	"metadata.resourceVersion": true,
	"metadata.managedFields":   true,
	"metadata.generation":      true,
}

func diffValue(path string, a, b any, out *[]string) {
	if ignored[path] {
		return
	}
	if label, ok := mapLabel(path); ok {
		am, _ := a.(map[string]any)
		bm, _ := b.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(union(am, bm))) {
			av, inA := am[k]
			bv, inB := bm[k]
			switch {
			case !inA:
				*out = append(*out, fmt.Sprintf("%s %s added (%s)", label, k, short(bv)))
			case !inB:
				*out = append(*out, fmt.Sprintf("%s %s removed", label, k))
			case !reflect.DeepEqual(av, bv):
				*out = append(*out, fmt.Sprintf("%s %s %s → %s", label, k, short(av), short(bv)))
			}
		}
		return
	}
	switch {
	case a == nil && b == nil:
	case a == nil:
		*out = append(*out, fmt.Sprintf("%s set (%s)", path, short(b)))
	case b == nil:
		*out = append(*out, fmt.Sprintf("%s removed", path))
	default:
		am, aIsMap := a.(map[string]any)
		bm, bIsMap := b.(map[string]any)
		if aIsMap && bIsMap {
			for _, k := range slices.Sorted(maps.Keys(union(am, bm))) {
				diffValue(join(path, k), am[k], bm[k], out)
			}
			return
		}
		al, aIsList := a.([]any)
		bl, bIsList := b.([]any)
		if aIsList && bIsList {
			for i := range min(len(al), len(bl)) {
				diffValue(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i], out)
			}
			if len(al) != len(bl) {
				*out = append(*out, fmt.Sprintf("%s %d items → %d", path, len(al), len(bl)))
			}
			return
		}
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, fmt.Sprintf("%s %s → %s", path, short(a), short(b)))
		}
	}
}

// mapLabel is how a change of a key of metadata.labels or
// metadata.annotations is named.
func mapLabel(path string) (string, bool) {
	switch path {
	case "metadata.annotations":
		return "annotation", true
	case "metadata.labels":
		return "label", true
	}
	return "", false
}

func union(a, b map[string]any) map[string]any {
	u := make(map[string]any, len(a)+len(b))
	maps.Copy(u, a)
	maps.Copy(u, b)
	return u
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// short formats a value for a description: strings quoted, composites
// summarised, everything cut at 40 characters.
func short(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = fmt.Sprintf("%q", v)
	case map[string]any:
		s = fmt.Sprintf("%d fields", len(v))
	case []any:
		s = fmt.Sprintf("%d items", len(v))
	default:
		s = fmt.Sprint(v)
	}
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	return s
}
