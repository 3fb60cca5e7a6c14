package memcluster

import (
	"github.com/ctrlkit/ctrlkit/internal/gate"

	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Patch applies a patch to the object called name, then stores it as
// [Client.Update] would (or [Client.UpdateStatus] with the subresource
// "status"). Supported types:
//
//   - [types.StrategicMergePatchType], with the typed struct's merge keys
//     (ownerReferences merge on uid, so {"$patch":"delete","uid":…}
//     removes one reference);
//   - [types.MergePatchType] (RFC 7386);
//   - [types.JSONPatchType] (RFC 6902: add, remove, replace, move, copy,
//     test). A failed test is a 422;
//   - [types.ApplyYAMLPatchType]: server-side apply, on a kind the cluster
//     tracks (see [Config.TypeConverter]; else 415). opts.FieldManager is
//     required (422 without), opts.Force takes over conflicting fields
//     (409 without, naming the managers and fields); an apply creates the
//     object if it does not exist (not through "status"). See "Server-side
//     apply" in the package documentation.
//
// Documents and patches are decoded as kube-apiserver decodes them:
// integers stay int64 (k8s.io/apimachinery/pkg/util/json), so a field the
// patch does not touch keeps its exact value (2^53+1 is not rounded
// through a float64) and MaxInt64 round-trips.
//
// A metadata.uid in the patch that differs from the stored one, or a
// metadata.resourceVersion that is not the stored one, fails with Conflict:
// controllers use both as preconditions. The field manager of the other
// patch types is opts.FieldManager, as for [Client.Create].
func (cl Client[T]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	if len(subresources) > 0 && (len(subresources) != 1 || subresources[0] != "status") {
		var zero T
		return zero, apierrors.NewNotFound(schema.GroupResource{Group: cl.r.kind.GVK.Group, Resource: cl.r.kind.Resource + "/" + strings.Join(subresources, "/")}, name)
	}
	out, _, err := cl.patch(ctx, name, pt, data, opts, strings.Join(subresources, ""), "", nil)
	return out, err
}

// patch is Patch of the resource or its subresource sub ("status", or
// "scale" for an apply of spec.replicas that [api.patchScale] made),
// telling also whether an apply created the object. version is the
// version of the request ("": the kind's own), whose field managers
// record it; view, if set, returns the stored object as the patch sees
// it (a custom kind's, in the version of the request).
func (cl Client[T]) patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub, version string, view func(T) (T, error)) (T, bool, error) {
	var zero T
	c := cl.r.c
	verb := gate.VerbPatch
	status := sub == "status"
	switch pt {
	case types.StrategicMergePatchType, types.MergePatchType, types.JSONPatchType, types.ApplyYAMLPatchType:
	default:
		return zero, false, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", cl.r.kind.groupResource(), name,
			fmt.Sprintf("unsupported patch type %q", pt), 0, false)
	}
	if pt == types.ApplyYAMLPatchType {
		if err := cl.r.applicable(); err != nil {
			return zero, false, err
		}
	}
	if errs := metav1validation.ValidatePatchOptions(&opts, pt); len(errs) > 0 {
		return zero, false, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	after, err := c.admit(ctx, verb, cl.r.kind.groupResource(), cl.ns, name)
	if err != nil {
		return zero, false, err
	}
	var out T
	var created bool
	switch {
	case c.admitting() && pt == types.ApplyYAMLPatchType:
		out, created, err = cl.applyAdmitted(ctx, name, data, opts, sub, version, view)
	case c.admitting():
		out, err = cl.patchAdmitted(ctx, name, pt, data, opts, sub, version, view)
	default:
		c.mu.Lock()
		if pt == types.ApplyYAMLPatchType {
			out, created, err = cl.r.applyLocked(cl.ns, name, data, opts, sub, version, view)
		} else {
			out, err = cl.r.patchLocked(cl.key(cl.ns, name), pt, data, status, managerOf(opts.FieldManager), view)
		}
		c.mu.Unlock()
	}
	if err != nil {
		return zero, false, err
	}
	if after != nil {
		return zero, false, after
	}
	return out, created, nil
}

// patchLocked patches the object at key, by a; view, if set, returns
// the stored object as the patch sees it (a custom kind's, in the version
// of the request).
func (r *Resource[T]) patchLocked(key types.NamespacedName, pt types.PatchType, data []byte, status bool, a author, view func(T) (T, error)) (T, error) {
	var zero T
	old, ok := r.objs[key]
	if !ok {
		return zero, apierrors.NewNotFound(r.kind.groupResource(), key.Name)
	}
	in, err := r.patched(old, key, pt, data, view)
	if err != nil {
		return zero, err
	}
	if status {
		return r.updateStatusLocked(in, a)
	}
	return r.updateLocked(in, a)
}

// patched returns the stored object old at key (seen through view, if
// set) with the patch applied: a private object to write.
func (r *Resource[T]) patched(old T, key types.NamespacedName, pt types.PatchType, data []byte, view func(T) (T, error)) (T, error) {
	var zero T
	if view != nil {
		var err error
		if old, err = view(old); err != nil {
			return zero, err
		}
	}
	orig, err := json.Marshal(old)
	if err != nil {
		return zero, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch pt {
	case types.StrategicMergePatchType:
		if r.kind.NoStrategicMerge {
			// kube-apiserver's answer, which lists the patch types it accepts.
			return zero, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
				Message: "the body of the request was in an unknown format - accepted media types include: " +
					"application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
			}}
		}
		patched, err = strategicMergePatch(orig, data, reflect.TypeOf(r.kind.New()))
		if err != nil {
			return zero, apierrors.NewBadRequest(err.Error())
		}
	case types.MergePatchType:
		patched, err = mergePatch(orig, data)
		if err != nil {
			return zero, apierrors.NewBadRequest(err.Error())
		}
	case types.JSONPatchType:
		patched, err = jsonPatch(orig, data)
		if err != nil {
			return zero, err
		}
	default:
		return zero, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", r.kind.groupResource(), key.Name,
			fmt.Sprintf("unsupported patch type %q", pt), 0, false)
	}
	in := r.kind.New()
	if err := json.Unmarshal(patched, in); err != nil {
		return zero, apierrors.NewBadRequest(fmt.Sprintf("memcluster: decode patched %s: %v", r.kind.Resource, err))
	}
	clearTypeMeta(in)
	if in.GetName() != key.Name || in.GetNamespace() != key.Namespace {
		return zero, apierrors.NewBadRequest("the name and namespace of a patched object cannot change")
	}
	return in, nil
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(doc, patch []byte) ([]byte, error) {
	var d, p any
	if err := utiljson.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := utiljson.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("invalid JSON merge patch: %w", err)
	}
	return json.Marshal(mergeValue(d, p))
}

func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
		} else {
			tm[k] = mergeValue(tm[k], v)
		}
	}
	return tm
}

type jsonPatchOp struct {
	Op    string           `json:"op"`
	Path  string           `json:"path"`
	From  string           `json:"from"`
	Value *json.RawMessage `json:"value"`
}

// The limits kube-apiserver puts on a JSON patch: operations per patch
// (a 413 beyond), and bytes copied by "copy" operations in total (the
// operation fails beyond).
const (
	maxJSONPatchOperations = 10000
	maxJSONPatchCopyBytes  = 3 << 20
)

// jsonPatch applies an RFC 6902 JSON patch. Decoding errors are a 400;
// operations that fail (a missing path, a failed test) are a 422.
func jsonPatch(doc, patch []byte) ([]byte, error) {
	var ops []jsonPatchOp
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON patch: %v", err))
	}
	if len(ops) > maxJSONPatchOperations {
		return nil, apierrors.NewRequestEntityTooLargeError(
			fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
	}
	var d any
	if err := utiljson.Unmarshal(doc, &d); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	copied := 0
	for i, op := range ops {
		var err error
		if d, err = applyOp(d, op, &copied); err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "",
				fmt.Sprintf("json patch operation %d (%s %s): %v", i, op.Op, op.Path, err), 0, false)
		}
	}
	return json.Marshal(d)
}

// applyOp applies one operation to d; copied counts the bytes "copy"
// operations have copied so far.
func applyOp(d any, op jsonPatchOp, copied *int) (any, error) {
	path, err := pointer(op.Path)
	if err != nil {
		return nil, err
	}
	value := func() (any, error) {
		if op.Value == nil {
			return nil, fmt.Errorf("missing value")
		}
		var v any
		return v, utiljson.Unmarshal(*op.Value, &v)
	}
	switch op.Op {
	case "add", "replace":
		v, err := value()
		if err != nil {
			return nil, err
		}
		return setAt(d, path, v, op.Op == "add")
	case "remove":
		return removeAt(d, path)
	case "test":
		v, err := value()
		if err != nil {
			return nil, err
		}
		got, err := getAt(d, path)
		if err != nil {
			return nil, err
		}
		if !reflect.DeepEqual(got, v) {
			return nil, fmt.Errorf("testing value %s failed", op.Path)
		}
		return d, nil
	case "move", "copy":
		from, err := pointer(op.From)
		if err != nil {
			return nil, err
		}
		v, err := getAt(d, from)
		if err != nil {
			return nil, err
		}
		if op.Op == "move" {
			if d, err = removeAt(d, from); err != nil {
				return nil, err
			}
		} else {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			if *copied += len(b); *copied > maxJSONPatchCopyBytes {
				return nil, fmt.Errorf("unable to copy, would exceed the maximum copy size of %d bytes", maxJSONPatchCopyBytes)
			}
			v = runtime.DeepCopyJSONValue(v) // a copy, not an alias of the source
		}
		return setAt(d, path, v, true)
	default:
		return nil, fmt.Errorf("unsupported operation %q", op.Op)
	}
}

// pointer splits an RFC 6901 JSON pointer into unescaped tokens.
func pointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("invalid JSON pointer %q", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

func getAt(d any, path []string) (any, error) {
	for _, tok := range path {
		switch c := d.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("path element %q not found", tok)
			}
			d = v
		case []any:
			i, err := index(tok, len(c)-1)
			if err != nil {
				return nil, err
			}
			d = c[i]
		default:
			return nil, fmt.Errorf("path element %q not found", tok)
		}
	}
	return d, nil
}

// setAt adds (insert) or replaces the value at path and returns the new document.
func setAt(d any, path []string, v any, insert bool) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	tok, rest := path[0], path[1:]
	switch c := d.(type) {
	case map[string]any:
		if len(rest) == 0 {
			if _, ok := c[tok]; !ok && !insert {
				return nil, fmt.Errorf("path element %q not found", tok)
			}
			c[tok] = v
			return c, nil
		}
		child, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("path element %q not found", tok)
		}
		nc, err := setAt(child, rest, v, insert)
		c[tok] = nc
		return c, err
	case []any:
		if len(rest) == 0 && insert {
			i := len(c)
			if tok != "-" {
				var err error
				if i, err = index(tok, len(c)); err != nil {
					return nil, err
				}
			}
			c = append(c, nil)
			copy(c[i+1:], c[i:])
			c[i] = v
			return c, nil
		}
		i, err := index(tok, len(c)-1)
		if err != nil {
			return nil, err
		}
		if len(rest) == 0 {
			c[i] = v
			return c, nil
		}
		nc, err := setAt(c[i], rest, v, insert)
		c[i] = nc
		return c, err
	default:
		return nil, fmt.Errorf("path element %q not found", tok)
	}
}

func removeAt(d any, path []string) (any, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("cannot remove the whole document")
	}
	tok, rest := path[0], path[1:]
	switch c := d.(type) {
	case map[string]any:
		child, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("path element %q not found", tok)
		}
		if len(rest) == 0 {
			delete(c, tok)
			return c, nil
		}
		nc, err := removeAt(child, rest)
		c[tok] = nc
		return c, err
	case []any:
		i, err := index(tok, len(c)-1)
		if err != nil {
			return nil, err
		}
		if len(rest) == 0 {
			return append(c[:i], c[i+1:]...), nil
		}
		nc, err := removeAt(c[i], rest)
		c[i] = nc
		return c, err
	default:
		return nil, fmt.Errorf("path element %q not found", tok)
	}
}

func index(tok string, max int) (int, error) {
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || i > max || (len(tok) > 1 && tok[0] == '0') {
		return 0, fmt.Errorf("invalid array index %q", tok)
	}
	return i, nil
}
