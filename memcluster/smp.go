package memcluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// A strategic merge patch, implemented from the struct tags of the typed
// object (patchStrategy, patchMergeKey) because apimachinery's
// strategicpatch package pulls in OpenAPI dependencies this module does
// not carry. Supported: merging of maps and structs, null deleting a key,
// lists with patchStrategy "merge" (merged by patchMergeKey for objects,
// union for primitives), the directives $patch (replace, delete, merge),
// $deleteFromPrimitiveList/<field>, $retainKeys; $setElementOrder/<field>
// is accepted and ignored (the order of the stored list is kept). Lists
// without a merge strategy are replaced, as upstream.

// strategicMergePatch applies patch to the JSON document doc of a typed object of type t.
func strategicMergePatch(doc, patch []byte, t reflect.Type) ([]byte, error) {
	var d, p map[string]any // integers decode as int64, as in kube-apiserver
	if err := utiljson.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := utiljson.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("invalid strategic merge patch: %w", err)
	}
	out, err := smpMap(d, p, t)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// smpMap merges patch into orig, a JSON object of Go type t (a struct or a map).
func smpMap(orig, patch map[string]any, t reflect.Type) (map[string]any, error) {
	t = deref(t)
	switch patch["$patch"] {
	case "replace":
		out := maps.Clone(patch)
		delete(out, "$patch")
		return out, nil
	case "delete":
		return nil, nil
	case nil, "merge":
	default:
		return nil, fmt.Errorf("unknown $patch directive %v", patch["$patch"])
	}
	if orig == nil {
		orig = map[string]any{}
	}
	if keep, ok := patch["$retainKeys"].([]any); ok {
		for k := range orig {
			if !slices.Contains(keep, any(k)) {
				delete(orig, k)
			}
		}
	}
	for k, pv := range patch {
		switch {
		case k == "$patch" || k == "$retainKeys" || strings.HasPrefix(k, "$setElementOrder/"):
			continue
		case strings.HasPrefix(k, "$deleteFromPrimitiveList/"):
			name := strings.TrimPrefix(k, "$deleteFromPrimitiveList/")
			del, _ := pv.([]any)
			if list, ok := orig[name].([]any); ok {
				orig[name] = slices.DeleteFunc(list, func(v any) bool { return slices.Contains(del, v) })
			}
			continue
		}
		if pv == nil {
			delete(orig, k)
			continue
		}
		ft, strategy, mergeKey := fieldType(t, k)
		switch v := pv.(type) {
		case map[string]any:
			ov, _ := orig[k].(map[string]any)
			if ft == nil || (deref(ft).Kind() != reflect.Struct && deref(ft).Kind() != reflect.Map) {
				orig[k] = v
				continue
			}
			merged, err := smpMap(ov, v, ft)
			if err != nil {
				return nil, err
			}
			if merged == nil {
				delete(orig, k)
			} else {
				orig[k] = merged
			}
		case []any:
			if ft == nil || !slices.Contains(strings.Split(strategy, ","), "merge") {
				orig[k] = v
				continue
			}
			ov, _ := orig[k].([]any)
			merged, err := smpList(ov, v, deref(ft).Elem(), mergeKey)
			if err != nil {
				return nil, err
			}
			orig[k] = merged
		default:
			orig[k] = v
		}
	}
	return orig, nil
}

// smpList merges a list with the "merge" strategy.
func smpList(orig, patch []any, elem reflect.Type, mergeKey string) ([]any, error) {
	if len(patch) > 0 {
		if m, ok := patch[0].(map[string]any); ok && m["$patch"] == "replace" {
			return slices.Clone(patch[1:]), nil
		}
	}
	out := slices.Clone(orig)
	if mergeKey == "" || deref(elem).Kind() != reflect.Struct {
		for _, v := range patch {
			if !slices.ContainsFunc(out, func(o any) bool { return reflect.DeepEqual(o, v) }) {
				out = append(out, v)
			}
		}
		return out, nil
	}
	for _, v := range patch {
		pm, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("list with merge key %q has a non-object element", mergeKey)
		}
		key, ok := pm[mergeKey]
		if !ok {
			return nil, fmt.Errorf("map in list does not contain the merge key %q", mergeKey)
		}
		i := slices.IndexFunc(out, func(o any) bool {
			om, ok := o.(map[string]any)
			return ok && reflect.DeepEqual(om[mergeKey], key)
		})
		if pm["$patch"] == "delete" {
			if i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
			continue
		}
		if i < 0 {
			clean := maps.Clone(pm)
			delete(clean, "$patch")
			out = append(out, clean)
			continue
		}
		merged, err := smpMap(out[i].(map[string]any), pm, elem)
		if err != nil {
			return nil, err
		}
		out[i] = merged
	}
	return out, nil
}

// fieldType returns the Go type, patch strategy and merge key of the JSON
// field name in t (a struct, looking through inline fields, or a map).
func fieldType(t reflect.Type, name string) (reflect.Type, string, string) {
	t = deref(t)
	switch t.Kind() {
	case reflect.Map:
		return t.Elem(), "", ""
	case reflect.Struct:
	default:
		return nil, "", ""
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" && strings.Contains(opts, "inline") {
			if ft, s, k := fieldType(f.Type, name); ft != nil {
				return ft, s, k
			}
			continue
		}
		if tag == name {
			return f.Type, f.Tag.Get("patchStrategy"), f.Tag.Get("patchMergeKey")
		}
	}
	return nil, "", ""
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
