package memcluster

import (
	"github.com/ctrlkit/ctrlkit/internal/gate"

	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Lists follow kube-apiserver's resourceVersion and pagination semantics:
//
//   - resourceVersion "" lists the current state; "0" too, and ignores
//     limit (kube-apiserver serves it from its watch cache, unpaginated).
//   - resourceVersion N with resourceVersionMatch Exact (or with a limit
//     and no match, the legacy form) lists the state at N; NotOlderThan
//     (or no match and no limit) lists the current state. N beyond the
//     current version is a 504 (too large resource version).
//   - limit returns at most that many items, sorted by key (namespace,
//     then name, in the byte order of kube-apiserver's keys "ns/name"),
//     and a continue token when more remain, with remainingItemCount when
//     the list has no label or field selector. The token lists the rest
//     at the first page's version: a consistent list.
//   - A state older than what the kind's watch history retains
//     (Config.WatchHistory events) is compacted: an Exact list of it is a
//     410 Expired, and a continue token of it a 410 whose status carries a
//     fresh token that continues at the current version (an inconsistent
//     list), with kube-apiserver's messages.
//
// The tokens are kube-apiserver's: base64 (URL, unpadded) JSON of
// {"v":"meta.k8s.io/v1","rv":<version>,"start":"/<key of the last item>\u0000"},
// the key relative to the list's scope ("/ns/name" for all namespaces,
// "/name" in one namespace or for a cluster-scoped kind).

const (
	listTooOld           = "The resourceVersion for the provided list is too old."
	continueInconsistent = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
)

// continueToken is the JSON of a continue token.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

func encodeContinue(rv int64, start string) string {
	b, err := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rv, StartKey: start})
	if err != nil {
		panic("memcluster: encoding a continue token: " + err.Error()) // a struct of strings and an int
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

var errInvalidContinue = errors.New("continue key is not valid")

// decodeContinue returns a token's version (-1: the current one) and its
// start key, relative to the list's scope, without the leading "/".
func decodeContinue(s string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %v", errInvalidContinue, err)
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return 0, "", fmt.Errorf("%w: %v", errInvalidContinue, err)
	}
	if t.APIVersion != "meta.k8s.io/v1" {
		return 0, "", fmt.Errorf("continue key is not valid: server does not recognize this encoded version %v", t.APIVersion)
	}
	if t.ResourceVersion == 0 {
		return 0, "", errors.New("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	if t.StartKey == "" {
		return 0, "", errors.New("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
	}
	key := t.StartKey
	if !strings.HasPrefix(key, "/") {
		key = "/" + key
	}
	if path.Clean(key) != key {
		return 0, "", fmt.Errorf("%w: %v", errInvalidContinue, t.StartKey)
	}
	return t.ResourceVersion, key[1:], nil
}

// cmpStoreKey orders keys as kube-apiserver's storage does: by
// "namespace/name", byte-wise.
func cmpStoreKey(a, b types.NamespacedName) int {
	if a.Namespace == b.Namespace {
		return strings.Compare(a.Name, b.Name)
	}
	x, y := a.Namespace, b.Namespace
	n := min(len(x), len(y))
	if c := strings.Compare(x[:n], y[:n]); c != 0 {
		return c
	}
	if len(x) < len(y) { // x + "/" against y's next byte
		return cmp.Compare('/', rune(y[n]))
	}
	return cmp.Compare(rune(x[n]), '/')
}

// scopeKey is key as the list of a scope names it: "ns/name" for all
// namespaces, "name" otherwise.
func scopeKey(key types.NamespacedName, allNamespaces bool) string {
	if allNamespaces && key.Namespace != "" {
		return key.Namespace + "/" + key.Name
	}
	return key.Name
}

// ListPage lists the objects that match opts's selectors, with
// kube-apiserver's pagination: at most opts.Limit items (all if 0) from
// where opts.Continue left off, and the list's metadata: its
// resourceVersion, the continue token of the rest and, for a list without
// selectors, remainingItemCount. See the package documentation for the
// resourceVersion semantics.
func (cl Client[T]) ListPage(ctx context.Context, opts metav1.ListOptions) ([]T, metav1.ListMeta, error) {
	c := cl.r.c
	after, err := c.admit(ctx, gate.VerbList, cl.r.kind.groupResource(), cl.ns, "")
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	if err := c.waitForWatchCache(ctx, cl.r.kind.groupResource(), cl.ns, opts); err != nil {
		return nil, metav1.ListMeta{}, err
	}
	match, err := cl.matcher(opts)
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	c.mu.Lock()
	items, meta, err := cl.listLocked(opts, match)
	c.mu.Unlock()
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	if after != nil {
		return nil, metav1.ListMeta{}, after
	}
	for i, it := range items {
		items[i] = deepCopy(it)
	}
	return items, meta, nil
}

// listLocked is ListPage's work under the lock: the stored snapshots.
func (cl Client[T]) listLocked(opts metav1.ListOptions, match func(T) bool) ([]T, metav1.ListMeta, error) {
	at, start, err := cl.r.listVersionLocked(opts)
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	state, ok := cl.r.stateAtLocked(at)
	if !ok {
		if opts.Continue != "" {
			st := apierrors.NewResourceExpired(continueInconsistent)
			st.ErrStatus.ListMeta.Continue = encodeContinue(-1, "/"+start)
			return nil, metav1.ListMeta{}, st
		}
		return nil, metav1.ListMeta{}, apierrors.NewResourceExpired(listTooOld)
	}
	ns := cl.ns
	if cl.r.kind.ClusterScoped {
		ns = ""
	}
	all := ns == "" && !cl.r.kind.ClusterScoped
	limit := opts.Limit
	if opts.ResourceVersion == "0" && opts.Continue == "" {
		limit = 0 // served unpaginated, as from kube-apiserver's watch cache
	}
	keys := make([]types.NamespacedName, 0, len(state))
	for key, obj := range state {
		if ns != "" && key.Namespace != ns {
			continue
		}
		if start != "" && scopeKey(key, all) < start { // the range starts at the token's key
			continue
		}
		if limit == 0 && !match(obj) {
			continue // without a limit, only the matches matter
		}
		keys = append(keys, key)
	}
	slices.SortFunc(keys, cmpStoreKey)
	var items []T
	meta := metav1.ListMeta{ResourceVersion: formatRV(at)}
	for i, key := range keys {
		if limit > 0 && int64(len(items)) == limit {
			meta.Continue = encodeContinue(int64(at), "/"+scopeKey(keys[i-1], all)+"\x00")
			if opts.LabelSelector == "" && opts.FieldSelector == "" {
				n := int64(len(keys)) - limit
				meta.RemainingItemCount = &n
			}
			break
		}
		if obj := state[key]; limit == 0 || match(obj) {
			items = append(items, obj)
		}
	}
	return items, meta, nil
}

// listVersionLocked returns the version a list with opts is served at,
// and the scope key its continue token starts at ("" for none; a token's
// key is the last one it listed followed by a NUL byte).
func (r *Resource[T]) listVersionLocked(opts metav1.ListOptions) (uint64, string, error) {
	cur := r.c.rv
	if opts.Continue != "" {
		rv, start, err := decodeContinue(opts.Continue)
		if err != nil {
			return 0, "", apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return 0, "", apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		if rv < 0 {
			return cur, start, nil
		}
		if uint64(rv) > cur {
			return 0, "", tooLargeRV(uint64(rv), cur)
		}
		return uint64(rv), start, nil
	}
	switch opts.ResourceVersion {
	case "", "0":
		return cur, "", nil
	}
	want, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
	if err != nil {
		return 0, "", apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %q", opts.ResourceVersion))
	}
	if want > cur {
		return 0, "", tooLargeRV(want, cur)
	}
	switch opts.ResourceVersionMatch {
	case metav1.ResourceVersionMatchExact:
		return want, "", nil
	case metav1.ResourceVersionMatchNotOlderThan:
		return cur, "", nil
	case "":
		if opts.Limit > 0 {
			return want, "", nil // the legacy exact list
		}
		return cur, "", nil
	}
	return 0, "", apierrors.NewBadRequest(fmt.Sprintf("unknown ResourceVersionMatch value: %v", opts.ResourceVersionMatch))
}

// stateAtLocked returns the objects of the kind as they were at version
// at (the stored map itself for the current version: read only), or false
// if the history no longer holds what happened since.
func (r *Resource[T]) stateAtLocked(at uint64) (map[types.NamespacedName]T, bool) {
	if at >= r.c.rv {
		return r.objs, true
	}
	if at < r.hist.compacted {
		return nil, false
	}
	since := r.hist.since(at)
	if len(since) == 0 {
		return r.objs, true
	}
	state := maps.Clone(r.objs)
	var none T
	for i := len(since) - 1; i >= 0; i-- {
		e := since[i]
		key := objectKey(e.obj)
		if e.typ == watch.Added || any(e.prev) == any(none) {
			delete(state, key)
			continue
		}
		state[key] = e.prev
	}
	return state, true
}
