package memcluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
)

func TestListPages(t *testing.T) {
	c, _ := newTestCluster(t)
	ctx := ctxT(t)
	for _, ns := range []string{"a", "a-b"} {
		for _, name := range []string{"p1", "p2", "p3"} {
			must(c.Pods(ns).Create(ctx, podIn(ns, name), metav1.CreateOptions{}))(t)
		}
	}
	pods := c.Pods("")
	page1, meta1, err := pods.ListPage(ctx, metav1.ListOptions{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Keys sort as kube-apiserver's storage sorts them: "a-b/..." before "a/...".
	if got := keysOf(page1); !cmp.Equal(got, []string{"a-b/p1", "a-b/p2", "a-b/p3", "a/p1"}) {
		t.Errorf("first page = %v", got)
	}
	if meta1.RemainingItemCount == nil || *meta1.RemainingItemCount != 2 || meta1.ResourceVersion != "7" {
		t.Errorf("first page metadata = %+v; want 2 remaining at version 7", meta1)
	}
	if got := tokenOf(t, meta1.Continue); got != `{"v":"meta.k8s.io/v1","rv":7,"start":"/a/p1\u0000"}` {
		t.Errorf("token = %s", got)
	}
	// What happens after the first page is not seen by the next ones.
	if err := c.Pods("a").Delete(ctx, "p2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	must(c.Pods("a").Create(ctx, podIn("a", "p0"), metav1.CreateOptions{}))(t)
	page2, meta2, err := pods.ListPage(ctx, metav1.ListOptions{Limit: 4, Continue: meta1.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(page2); !cmp.Equal(got, []string{"a/p2", "a/p3"}) || meta2.Continue != "" || meta2.RemainingItemCount != nil || meta2.ResourceVersion != "7" {
		t.Errorf("second page = %v %+v; want a/p2 a/p3 at version 7, the last", got, meta2)
	}
	// A selector: no remaining count, and a token even if nothing more matches.
	sel, meta, err := c.Pods("a").ListPage(ctx, metav1.ListOptions{Limit: 1, FieldSelector: "metadata.name!=p9"})
	if err != nil || !cmp.Equal(keysOf(sel), []string{"a/p0"}) || meta.RemainingItemCount != nil || meta.Continue == "" {
		t.Errorf("page with a selector = %v %+v %v", keysOf(sel), meta, err)
	}
	if got := tokenOf(t, meta.Continue); got != `{"v":"meta.k8s.io/v1","rv":10,"start":"/p0\u0000"}` {
		t.Errorf("token in a namespace = %s", got)
	}
	// resourceVersion 0 is served whole.
	all, meta, err := pods.ListPage(ctx, metav1.ListOptions{Limit: 1, ResourceVersion: "0"})
	if err != nil || len(all) != 6 || meta.Continue != "" {
		t.Errorf("list at 0 with a limit = %d items, %+v, %v; want all 6", len(all), meta, err)
	}
	// List ignores the limit but follows a token.
	rest, rv, err := pods.List(ctx, metav1.ListOptions{Limit: 1, Continue: meta1.Continue})
	if err != nil || !cmp.Equal(keysOf(rest), []string{"a/p2", "a/p3"}) || rv != "7" {
		t.Errorf("List with a token = %v %s %v", keysOf(rest), rv, err)
	}
}

func TestListAtOlderVersions(t *testing.T) {
	c := New(Config{Clock: clock.NewFake(t0), Seed: 1, WatchHistory: 3})
	ctx := ctxT(t)
	pods := c.Pods("ns")
	for _, name := range []string{"a", "b", "c"} {
		must(pods.Create(ctx, pod(name, "", ""), metav1.CreateOptions{}))(t)
	}
	_, meta, err := pods.ListPage(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := must(pods.Get(ctx, "a", metav1.GetOptions{}))(t)
	a.Labels["v"] = "2"
	must(pods.Update(ctx, a, metav1.UpdateOptions{}))(t) // rv 5
	at := func(rv string) []string {
		t.Helper()
		items, _, err := pods.ListPage(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil {
			t.Fatalf("list at %s: %v", rv, err)
		}
		var out []string
		for _, p := range items {
			out = append(out, p.Name+"@"+p.ResourceVersion)
		}
		return out
	}
	if got := at("3"); !cmp.Equal(got, []string{"a@2", "b@3"}) {
		t.Errorf("list at 3 = %v", got)
	}
	if got := at("5"); !cmp.Equal(got, []string{"a@5", "b@3", "c@4"}) {
		t.Errorf("list at 5 = %v", got)
	}
	if _, _, err := pods.ListPage(ctx, metav1.ListOptions{ResourceVersion: "10", ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsTimeout(err) {
		t.Errorf("list at a future version: %v; want a timeout (too large resource version)", err)
	}
	// Three more writes: the history of 3 no longer reaches version 4.
	for _, name := range []string{"d", "e", "f"} {
		must(pods.Create(ctx, pod(name, "", ""), metav1.CreateOptions{}))(t)
	}
	_, _, err = pods.ListPage(ctx, metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) || err.Error() != "The resourceVersion for the provided list is too old." {
		t.Errorf("list at a compacted version: %v; want 410 Expired", err)
	}
	_, _, err = pods.ListPage(ctx, metav1.ListOptions{Limit: 1, Continue: meta.Continue})
	var st apierrors.APIStatus
	if !apierrors.IsResourceExpired(err) || !errorsAs(err, &st) || st.Status().ListMeta.Continue == "" {
		t.Fatalf("continue at a compacted version: %v; want 410 with a fresh token", err)
	}
	if got := tokenOf(t, st.Status().ListMeta.Continue); got != `{"v":"meta.k8s.io/v1","rv":-1,"start":"/a\u0000"}` {
		t.Errorf("fresh token = %s", got)
	}
	// The fresh token continues at the current version: an inconsistent list.
	rest, meta, err := pods.ListPage(ctx, metav1.ListOptions{Continue: st.Status().ListMeta.Continue})
	if err != nil || !cmp.Equal(names(rest), []string{"b", "c", "d", "e", "f"}) || meta.ResourceVersion != "8" {
		t.Errorf("inconsistent continuation = %v %+v %v", names(rest), meta, err)
	}
}

func TestListOptionsRefused(t *testing.T) {
	c, _ := newTestCluster(t)
	ctx := ctxT(t)
	bad := base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"/../x"}`))
	for _, tt := range []struct {
		opts metav1.ListOptions
		want string
	}{
		{metav1.ListOptions{Continue: "!!"}, "invalid continue token: continue key is not valid: illegal base64 data at input byte 0"},
		{metav1.ListOptions{Continue: bad}, "invalid continue token: continue key is not valid: /../x"},
		{metav1.ListOptions{Continue: encodeContinue(1, "/a\x00"), ResourceVersion: "1"}, "specifying resource version is not allowed when using continue"},
		{metav1.ListOptions{ResourceVersion: "x"}, `invalid resource version: "x"`},
	} {
		_, _, err := c.Pods("ns").ListPage(ctx, tt.opts)
		if !apierrors.IsBadRequest(err) || err.Error() != tt.want {
			t.Errorf("ListPage(%+v) = %v; want BadRequest %q", tt.opts, err, tt.want)
		}
	}
}

func TestRESTPagination(t *testing.T) {
	c, _ := newTestCluster(t)
	rc := newRESTClient(t, c)
	for i := range 5 {
		must(c.Pods("ns").Create(ctxT(t), pod(fmt.Sprintf("p%d", i), "", ""), metav1.CreateOptions{}))(t)
	}
	var got []string
	token := ""
	for range 5 {
		resp, body := rc.do(req{method: "GET", path: "/api/v1/namespaces/ns/pods?limit=2&continue=" + token})
		var l struct {
			Metadata metav1.ListMeta `json:"metadata"`
			Items    []struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal(body, &l); err != nil || resp.StatusCode != 200 {
			t.Fatalf("page: %d %s", resp.StatusCode, body)
		}
		for _, it := range l.Items {
			got = append(got, it.Metadata.Name)
		}
		rem := -1
		if r := l.Metadata.RemainingItemCount; r != nil {
			rem = int(*r)
		}
		got = append(got, fmt.Sprintf("remaining=%d", rem))
		if token = l.Metadata.Continue; token == "" {
			break
		}
	}
	want := []string{"p0", "p1", "remaining=3", "p2", "p3", "remaining=1", "p4", "remaining=-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages mismatch (-want +got):\n%s", diff)
	}
}

func TestStoreKeyOrder(t *testing.T) {
	keys := []types.NamespacedName{{Namespace: "a", Name: "z"}, {Namespace: "a-b", Name: "a"}, {Namespace: "ab", Name: "a"}, {Namespace: "a", Name: "a"}, {Namespace: "", Name: "x"}}
	slices.SortFunc(keys, cmpStoreKey)
	var got []string
	for _, k := range keys {
		got = append(got, k.Namespace+"/"+k.Name)
	}
	want := slices.Clone(got)
	slices.Sort(want)
	if !cmp.Equal(got, want) {
		t.Errorf("keys sort as %v; want byte order of ns/name %v", got, want)
	}
}

func keysOf[T Object](items []T) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.GetNamespace()+"/"+it.GetName())
	}
	return out
}

func tokenOf(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("token %q: %v", s, err)
	}
	return string(b)
}

func errorsAs(err error, st *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	*st = s
	return ok
}
