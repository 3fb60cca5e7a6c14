package memcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeSchema stands in for a CRD's schema: spec may hold size, image and
// immutable (other spec fields and other top-level fields are dropped);
// size defaults to defaultSize and may not exceed maxSize; immutable may
// not change; status.phase must be Ready or Pending. It records what it
// was asked, as "<method> <apiVersion> [old <apiVersion>]".
type fakeSchema struct {
	version              string
	defaultSize, maxSize int64
	calls                *[]string
}

func (s fakeSchema) record(format string, args ...any) {
	if s.calls != nil {
		*s.calls = append(*s.calls, fmt.Sprintf(format, args...))
	}
}

func (s fakeSchema) Coerce(obj map[string]any) ([]string, error) {
	var unknown []string
	for k := range obj {
		switch k {
		case "apiVersion", "kind", "metadata", "spec", "status":
		default:
			unknown = append(unknown, k)
			delete(obj, k)
		}
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		for k := range spec {
			if k != "size" && k != "image" && k != "immutable" {
				unknown = append(unknown, "spec."+k)
				delete(spec, k)
			}
		}
	}
	slices.Sort(unknown)
	return unknown, nil
}

func (s fakeSchema) Default(obj map[string]any) {
	if spec, ok := obj["spec"].(map[string]any); ok {
		if _, set := spec["size"]; !set {
			spec["size"] = s.defaultSize
		}
	}
}

func (s fakeSchema) validateSpec(obj *unstructured.Unstructured) field.ErrorList {
	size, _, _ := unstructured.NestedInt64(obj.Object, "spec", "size")
	if size > s.maxSize {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "size"), size, fmt.Sprintf("should be less than or equal to %d", s.maxSize))}
	}
	return nil
}

func (s fakeSchema) Validate(obj *unstructured.Unstructured) field.ErrorList {
	s.record("Validate %s", obj.GetAPIVersion())
	return s.validateSpec(obj)
}

func (s fakeSchema) ValidateUpdate(obj, old *unstructured.Unstructured) field.ErrorList {
	s.record("ValidateUpdate %s old %s", obj.GetAPIVersion(), old.GetAPIVersion())
	errs := s.validateSpec(obj)
	a, _, _ := unstructured.NestedString(obj.Object, "spec", "immutable")
	b, _, _ := unstructured.NestedString(old.Object, "spec", "immutable")
	if a != b {
		errs = append(errs, field.Invalid(field.NewPath("spec", "immutable"), a, "is immutable"))
	}
	return errs
}

func (s fakeSchema) ValidateStatusUpdate(obj, old *unstructured.Unstructured) field.ErrorList {
	s.record("ValidateStatusUpdate %s old %s", obj.GetAPIVersion(), old.GetAPIVersion())
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	if phase != "" && phase != "Ready" && phase != "Pending" {
		return field.ErrorList{field.NotSupported(field.NewPath("status", "phase"), phase, []string{"Pending", "Ready"})}
	}
	return nil
}

// gadgets is a custom kind with two versions: v1 (size defaults to 1, at
// most 3) and v2, the storage version (size defaults to 2, at most 5).
func gadgets(calls *[]string) CustomKind {
	return CustomKind{
		Group: "example.com", Kind: "Gadget", Plural: "gadgets",
		ShortNames: []string{"gd"}, Categories: []string{"all"},
		Versions: []CustomVersion{
			{Name: "v1", Served: true, Status: true, Schema: fakeSchema{version: "v1", defaultSize: 1, maxSize: 3, calls: calls},
				Scale: &CustomScale{SpecReplicasPath: ".spec.size", StatusReplicasPath: ".status.size", LabelSelectorPath: ".status.selector"}},
			{Name: "v2", Served: true, Storage: true, Status: true, Schema: fakeSchema{version: "v2", defaultSize: 2, maxSize: 5, calls: calls}},
		},
	}
}

// obj decodes a JSON object, or fails the test.
func obj(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("undecodable %q: %v", body, err)
	}
	return m
}

func TestCustomKindVersions(t *testing.T) {
	c, _ := newTestCluster(t)
	var calls []string
	res, err := AddCustomKind(c, gadgets(&calls))
	if err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	const v1 = "/apis/example.com/v1/namespaces/ns/gadgets"
	const v2 = "/apis/example.com/v2/namespaces/ns/gadgets"

	// Created in v1: pruned and defaulted by v1's schema, validated in v1,
	// stored in v2 (unknown fields pruned by v2's schema too).
	resp, body := rc.do(req{method: http.MethodPost, path: v1, body: `{"apiVersion":"example.com/v1","kind":"Gadget",
		"metadata":{"name":"a"},"spec":{"image":"x","color":"red"},"extra":1,"status":{"phase":"Ready"}}`})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %s", summary(resp.StatusCode, body))
	}
	got := obj(t, body)
	if diff := cmp.Diff(map[string]any{"image": "x", "size": float64(1)}, got["spec"]); diff != "" {
		t.Errorf("created spec mismatch (-want +got):\n%s", diff)
	}
	if got["apiVersion"] != "example.com/v1" || got["status"] != nil || got["extra"] != nil {
		t.Errorf("created: apiVersion %v, status %v, extra %v; want example.com/v1 and neither status nor extra", got["apiVersion"], got["status"], got["extra"])
	}
	stored, err := res.Namespace("ns").Get(t.Context(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.GetAPIVersion() != "example.com/v2" {
		t.Errorf("stored apiVersion = %s; want the storage version example.com/v2", stored.GetAPIVersion())
	}

	// Read in v2: the stored object; a v2 object without size gets v2's default on reading.
	_, body = rc.do(req{method: http.MethodPost, path: v2, body: `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"b"},"spec":{}}`})
	if size := obj(t, body)["spec"].(map[string]any)["size"]; size != float64(2) {
		t.Errorf("created in v2: size %v; want v2's default 2", size)
	}
	_, body = rc.do(req{method: http.MethodGet, path: v1 + "/b"})
	if got := obj(t, body); got["apiVersion"] != "example.com/v1" {
		t.Errorf("GET in v1: apiVersion %v", got["apiVersion"])
	}

	// A size v2 allows and v1 does not: refused in v1 only.
	resp, body = rc.do(req{method: http.MethodPost, path: v1, body: `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"c"},"spec":{"size":4}}`})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), "spec.size") {
		t.Errorf("size 4 in v1: %s %s; want 422 on spec.size", summary(resp.StatusCode, body), body)
	}
	resp, body = rc.do(req{method: http.MethodPost, path: v2, body: `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"c"},"spec":{"size":4}}`})
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("size 4 in v2: %s", summary(resp.StatusCode, body))
	}

	// An update in v1 is validated against the stored object read in v1.
	calls = nil
	_, body = rc.do(req{method: http.MethodGet, path: v1 + "/a"})
	a := obj(t, body)
	a["spec"].(map[string]any)["image"] = "y"
	resp, body = rc.do(req{method: http.MethodPut, path: v1 + "/a", body: string(must(json.Marshal(a))(t))})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("update: %s %s", summary(resp.StatusCode, body), body)
	}
	if want := []string{"ValidateUpdate example.com/v1 old example.com/v1"}; !slices.Equal(calls, want) {
		t.Errorf("schema calls %q; want %q", calls, want)
	}
	if g := obj(t, body)["metadata"].(map[string]any)["generation"]; g != float64(2) {
		t.Errorf("generation after a spec change = %v; want 2", g)
	}

	// Lists and watches in each version.
	for _, path := range []string{v1, v2} {
		_, body := rc.do(req{method: http.MethodGet, path: path})
		l := obj(t, body)
		want := "example.com/" + path[len("/apis/example.com/"):len("/apis/example.com/")+2]
		if l["kind"] != "GadgetList" || l["apiVersion"] != want {
			t.Errorf("GET %s: %v %v; want GadgetList %s", path, l["kind"], l["apiVersion"], want)
		}
		for _, it := range l["items"].([]any) {
			if av := it.(map[string]any)["apiVersion"]; av != want {
				t.Errorf("GET %s: an item of %v", path, av)
			}
		}
	}
}

func TestCustomKindStatus(t *testing.T) {
	c, _ := newTestCluster(t)
	var calls []string
	if _, err := AddCustomKind(c, gadgets(&calls)); err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	const a = "/apis/example.com/v1/namespaces/ns/gadgets/a"
	rc.do(req{method: http.MethodPost, path: "/apis/example.com/v1/namespaces/ns/gadgets",
		body: `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"a"},"spec":{"size":1}}`})

	calls = nil
	resp, body := rc.do(req{method: http.MethodPatch, path: a + "/status", contentType: "application/merge-patch+json",
		body: `{"status":{"phase":"Ready"},"spec":{"size":3}}`})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status patch: %s %s", summary(resp.StatusCode, body), body)
	}
	got := obj(t, body)
	if got["status"].(map[string]any)["phase"] != "Ready" || got["spec"].(map[string]any)["size"] != float64(1) {
		t.Errorf("after a status write: %v; want the status written and the spec kept", got)
	}
	if want := []string{"ValidateStatusUpdate example.com/v1 old example.com/v1"}; !slices.Equal(calls, want) {
		t.Errorf("schema calls %q; want %q", calls, want)
	}
	resp, body = rc.do(req{method: http.MethodPatch, path: a + "/status", contentType: "application/merge-patch+json",
		body: `{"status":{"phase":"Broken"}}`})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), "status.phase") {
		t.Errorf("bad status: %s %s; want 422 on status.phase", summary(resp.StatusCode, body), body)
	}
	// An update keeps the status; the generation ignores it.
	resp, body = rc.do(req{method: http.MethodPatch, path: a, contentType: "application/merge-patch+json",
		body: `{"status":{"phase":"Pending"},"metadata":{"labels":{"x":"y"}}}`})
	got = obj(t, body)
	if resp.StatusCode != http.StatusOK || got["status"].(map[string]any)["phase"] != "Ready" || got["metadata"].(map[string]any)["generation"] != float64(1) {
		t.Errorf("update: %s %v; want the status kept at generation 1", summary(resp.StatusCode, body), got)
	}
	// Strategic merge patches are refused, as for every custom resource.
	resp, _ = rc.do(req{method: http.MethodPatch, path: a, contentType: "application/strategic-merge-patch+json", body: `{"spec":{"size":2}}`})
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("strategic merge patch: %d; want 415", resp.StatusCode)
	}
	// v2 has no status subresource path for scale, v1 does.
	resp, _ = rc.do(req{method: http.MethodGet, path: "/apis/example.com/v2/namespaces/ns/gadgets/a/scale"})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET v2 scale: %d; want 404 (v2 has no scale subresource)", resp.StatusCode)
	}
}

func TestCustomKindScale(t *testing.T) {
	c, _ := newTestCluster(t)
	if _, err := AddCustomKind(c, gadgets(nil)); err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	const a = "/apis/example.com/v1/namespaces/ns/gadgets/a"
	rc.do(req{method: http.MethodPost, path: "/apis/example.com/v1/namespaces/ns/gadgets",
		body: `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"a"},"spec":{"size":2}}`})
	rc.do(req{method: http.MethodPatch, path: a + "/status", contentType: "application/merge-patch+json",
		body: `{"status":{"size":1,"selector":"app=a"}}`})
	scale := func(body []byte) string {
		s := obj(t, body)
		return fmt.Sprintf("%v %v spec=%v status=%v", s["kind"], s["apiVersion"], s["spec"], s["status"])
	}
	_, body := rc.do(req{method: http.MethodGet, path: a + "/scale"})
	if got, want := scale(body), "Scale autoscaling/v1 spec=map[replicas:2] status=map[replicas:1 selector:app=a]"; got != want {
		t.Errorf("GET scale = %s; want %s", got, want)
	}
	_, body = rc.do(req{method: http.MethodPatch, path: a + "/scale", contentType: "application/merge-patch+json", body: `{"spec":{"replicas":3}}`})
	if got, want := scale(body), "Scale autoscaling/v1 spec=map[replicas:3] status=map[replicas:1 selector:app=a]"; got != want {
		t.Errorf("PATCH scale = %s; want %s", got, want)
	}
	// The kind's own validation applies: v1 allows at most 3.
	resp, body := rc.do(req{method: http.MethodPut, path: a + "/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"a"},"spec":{"replicas":4}}`})
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("PUT scale 4: %s; want 422", summary(resp.StatusCode, body))
	}
	_, body = rc.do(req{method: http.MethodGet, path: "/apis/example.com/v1/namespaces/ns/gadgets/a"})
	if size := obj(t, body)["spec"].(map[string]any)["size"]; size != float64(3) {
		t.Errorf("spec.size = %v after scaling to 3", size)
	}
}

func TestCustomKindDiscovery(t *testing.T) {
	c, _ := newTestCluster(t)
	if _, err := AddCustomKind(c, gadgets(nil)); err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	_, body := rc.do(req{method: http.MethodGet, path: "/apis/example.com"})
	var g metav1.APIGroup
	if err := json.Unmarshal(body, &g); err != nil {
		t.Fatal(err)
	}
	if g.PreferredVersion.Version != "v2" || len(g.Versions) != 2 {
		t.Errorf("group: %+v; want v2 preferred of two versions", g)
	}
	_, body = rc.do(req{method: http.MethodGet, path: "/apis/example.com/v1"})
	var l metav1.APIResourceList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	want := []metav1.APIResource{
		{Name: "gadgets", SingularName: "gadget", Namespaced: true, Kind: "Gadget", Verbs: resourceVerbs(), ShortNames: []string{"gd"}, Categories: []string{"all"}},
		{Name: "gadgets/status", Namespaced: true, Kind: "Gadget", Verbs: subresourceVerbs()},
		{Name: "gadgets/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: subresourceVerbs()},
	}
	if diff := cmp.Diff(want, l.APIResources); diff != "" {
		t.Errorf("v1 resources mismatch (-want +got):\n%s", diff)
	}
}

func TestCustomKindWebhookConversion(t *testing.T) {
	c, _ := newTestCluster(t)
	k := gadgets(nil)
	k.WebhookConversion = true
	if _, err := AddCustomKind(c, k); err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	resp, body := rc.do(req{method: http.MethodPost, path: "/apis/example.com/v2/namespaces/ns/gadgets",
		body: `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"a"},"spec":{}}`})
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("create in the storage version: %s", summary(resp.StatusCode, body))
	}
	resp, body = rc.do(req{method: http.MethodGet, path: "/apis/example.com/v1/namespaces/ns/gadgets/a"})
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "does not call conversion webhooks") {
		t.Errorf("GET in v1: %d %s; want 500 saying conversion webhooks are not supported", resp.StatusCode, body)
	}
}

func TestRemoveCustomKind(t *testing.T) {
	c, _ := newTestCluster(t)
	res, err := AddCustomKind(c, gadgets(nil))
	if err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	const coll = "/apis/example.com/v2/namespaces/ns/gadgets"
	rc.do(req{method: http.MethodPost, path: coll, body: `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"a"}}`})
	rc.do(req{method: http.MethodPost, path: coll, body: `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"held","finalizers":["example.com/hold"]}}`})
	w, err := res.Namespace("").Watch(t.Context(), metav1.ListOptions{ResourceVersion: c.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}

	if err := RemoveCustomKind(c, "example.com", "gadgets"); err != nil {
		t.Fatal(err)
	}
	// "a" is gone, "held" waits for its finalizer; the kind is served until then, but refuses creates.
	resp, body := rc.do(req{method: http.MethodPost, path: coll, body: `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"b"}}`})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "create not allowed while custom resource definition is terminating") {
		t.Errorf("create while terminating: %d %s", resp.StatusCode, body)
	}
	_, body = rc.do(req{method: http.MethodGet, path: coll})
	if got := summary(http.StatusOK, body); got != "200 GadgetList items=1" {
		t.Errorf("list while terminating: %s; want the held object alone", got)
	}
	held := obj(t, must(json.Marshal(must(res.Namespace("ns").Get(t.Context(), "held", metav1.GetOptions{}))(t)))(t))
	held["metadata"].(map[string]any)["finalizers"] = nil
	resp, body = rc.do(req{method: http.MethodPut, path: coll + "/held", body: string(must(json.Marshal(held))(t))})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("removing the finalizer: %s %s", summary(resp.StatusCode, body), body)
	}
	resp, _ = rc.do(req{method: http.MethodGet, path: coll})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("list after removal: %d; want 404", resp.StatusCode)
	}
	resp, _ = rc.do(req{method: http.MethodGet, path: "/apis/example.com/v2"})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("discovery after removal: %d; want 404", resp.StatusCode)
	}
	var evs []string
	for ev := range w.ResultChan() {
		evs = append(evs, fmt.Sprintf("%s %s", ev.Type, ev.Object.(*unstructured.Unstructured).GetName()))
	}
	want := []string{"DELETED a", "MODIFIED held", "DELETED held"}
	if !slices.Equal(evs, want) {
		t.Errorf("watch events %q; want %q, then the end of the watch", evs, want)
	}
	// The kind can be served again, empty.
	if _, err := AddCustomKind(c, gadgets(nil)); err != nil {
		t.Fatal(err)
	}
	_, body = rc.do(req{method: http.MethodGet, path: coll})
	if got := summary(http.StatusOK, body); got != "200 GadgetList items=0" {
		t.Errorf("list after adding the kind again: %s", got)
	}
}

func TestCustomKindErrors(t *testing.T) {
	c, _ := newTestCluster(t)
	for name, k := range map[string]CustomKind{
		"no storage":   {Group: "g", Kind: "K", Plural: "ks", Versions: []CustomVersion{{Name: "v1", Served: true}}},
		"two storages": {Group: "g", Kind: "K", Plural: "ks", Versions: []CustomVersion{{Name: "v1", Storage: true}, {Name: "v2", Storage: true}}},
		"no versions":  {Group: "g", Kind: "K", Plural: "ks"},
		"no kind":      {Group: "g", Plural: "ks", Versions: []CustomVersion{{Name: "v1", Storage: true}}},
		"bad scale":    {Group: "g", Kind: "K", Plural: "ks", Versions: []CustomVersion{{Name: "v1", Storage: true, Scale: &CustomScale{}}}},
	} {
		if _, err := AddCustomKind(c, k); err == nil {
			t.Errorf("%s: AddCustomKind succeeded", name)
		}
	}
	if _, err := AddCustomKind(c, CustomKind{Group: "apps", Kind: "Deployment", Plural: "mydeployments", Versions: []CustomVersion{{Name: "v1", Storage: true}}}); err == nil {
		t.Error("a custom kind named as a built-in one was added")
	}
	if err := RemoveCustomKind(c, "example.com", "nothing"); err == nil {
		t.Error("removing a kind that is not there succeeded")
	}
}

// TestStoredHook checks that a hook's writes are part of the request that
// called it: a status write of the object just created, seen by the
// client's next read and by watchers in order.
func TestStoredHook(t *testing.T) {
	c, _ := newTestCluster(t)
	var res *Resource[*widget]
	k, err := KindFor(widgetScheme(t), &widget{}, KindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	k.Stored = func(tx *Tx, ev watch.EventType, w *widget) {
		seen = append(seen, fmt.Sprintf("%s %s ready=%t", ev, w.Name, w.Status.Ready))
		if ev == watch.Added {
			next := w.DeepCopyObject().(*widget)
			next.Status.Ready = true
			if _, err := res.Tx(tx).UpdateStatus(next); err != nil {
				t.Errorf("UpdateStatus in the hook: %v", err)
			}
			if got := len(res.Tx(tx).List("")); got != 1 {
				t.Errorf("List in the hook: %d objects; want 1", got)
			}
		}
	}
	res = NewResource(c, k)
	created, err := res.Namespace("ns").Create(t.Context(), &widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.Ready {
		t.Error("the create's answer has the hook's status; want the object as created")
	}
	got, err := res.Namespace("ns").Get(t.Context(), "w", metav1.GetOptions{})
	if err != nil || !got.Status.Ready {
		t.Errorf("after the create: %+v, %v; want the hook's status", got.Status, err)
	}
	if want := []string{"ADDED w ready=false", "MODIFIED w ready=true"}; !slices.Equal(seen, want) {
		t.Errorf("hook calls %q; want %q", seen, want)
	}
}

// TestCustomKindWatch watches in v1 a kind stored in v2: events come in
// v1, read with the storage version's defaults.
func TestCustomKindWatch(t *testing.T) {
	c, _ := newTestCluster(t)
	if _, err := AddCustomKind(c, gadgets(nil)); err != nil {
		t.Fatal(err)
	}
	h := NewHandler(c)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://memcluster/apis/example.com/v1/namespaces/ns/gadgets?watch=true&resourceVersion="+c.ResourceVersion(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: Transport{Handler: h}}).Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rc := newRESTClient(t, c)
	rc.do(req{method: http.MethodPost, path: "/apis/example.com/v2/namespaces/ns/gadgets",
		body: `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"a"},"spec":{}}`})
	var ev struct {
		Type   string         `json:"type"`
		Object map[string]any `json:"object"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ev.Type, " ", ev.Object["apiVersion"], " ", ev.Object["spec"]); got != "ADDED example.com/v1 map[size:2]" {
		t.Errorf("watch event = %s; want ADDED example.com/v1 map[size:2]", got)
	}
}

// TestChangeCustomKind changes a served kind: a new version is served at
// once, the objects are kept, and neither the kind nor the scope may change.
func TestChangeCustomKind(t *testing.T) {
	c, _ := newTestCluster(t)
	k := gadgets(nil)
	if _, err := AddCustomKind(c, k); err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	rc.do(req{method: http.MethodPost, path: "/apis/example.com/v2/namespaces/ns/gadgets",
		body: `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"a"},"spec":{}}`})
	k.Versions = append(k.Versions, CustomVersion{Name: "v3", Served: true, Schema: fakeSchema{defaultSize: 3, maxSize: 9}})
	if _, err := AddCustomKind(c, k); err != nil {
		t.Fatal(err)
	}
	_, body := rc.do(req{method: http.MethodGet, path: "/apis/example.com/v3/namespaces/ns/gadgets/a"})
	if got := obj(t, body); got["apiVersion"] != "example.com/v3" {
		t.Errorf("GET in the new version: %s", body)
	}
	renamed := gadgets(nil)
	renamed.Kind = "Gizmo"
	if _, err := AddCustomKind(c, renamed); err == nil {
		t.Error("changing the kind succeeded")
	}
	scoped := gadgets(nil)
	scoped.ClusterScoped = true
	if _, err := AddCustomKind(c, scoped); err == nil {
		t.Error("changing the scope succeeded")
	}
}

// TestCustomKindSelectorsAndPages: field selectors of a custom kind are
// the request version's selectable fields (beside metadata's), and its
// lists page with limit and continue like any kind's.
func TestCustomKindSelectorsAndPages(t *testing.T) {
	c, _ := newTestCluster(t)
	k := gadgets(nil)
	k.Versions[0].SelectableFields = []string{".spec.image"}
	res, err := AddCustomKind(c, k)
	if err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	const v1 = "/apis/example.com/v1/namespaces/ns/gadgets"
	const v2 = "/apis/example.com/v2/namespaces/ns/gadgets"
	for i, image := range []string{"x", "y", "x"} {
		resp, body := rc.do(req{method: http.MethodPost, path: v2, body: fmt.Sprintf(`{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"g%d"},"spec":{"image":%q}}`, i, image)})
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %s", summary(resp.StatusCode, body))
		}
	}
	names := func(l map[string]any) []string {
		var out []string
		for _, it := range l["items"].([]any) {
			out = append(out, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
		}
		return out
	}
	resp, body := rc.do(req{method: http.MethodGet, path: v1 + "?fieldSelector=spec.image%3Dx"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("v1 spec.image=x: %s", summary(resp.StatusCode, body))
	}
	if got := names(obj(t, body)); !slices.Equal(got, []string{"g0", "g2"}) {
		t.Errorf("v1 spec.image=x: %v; want g0 g2", got)
	}
	resp, body = rc.do(req{method: http.MethodGet, path: v1 + "?fieldSelector=spec.image!%3Dx,metadata.name%3Dg1"})
	if got := names(obj(t, body)); resp.StatusCode != http.StatusOK || !slices.Equal(got, []string{"g1"}) {
		t.Errorf("v1 spec.image!=x,metadata.name=g1: %s %v; want g1", summary(resp.StatusCode, body), got)
	}
	resp, body = rc.do(req{method: http.MethodGet, path: v2 + "?fieldSelector=spec.image%3Dx"})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "field label not supported: spec.image") {
		t.Errorf("v2 (no selectable fields) spec.image=x: %s %s; want 400 field label not supported", summary(resp.StatusCode, body), body)
	}
	if _, _, err := res.Namespace("ns").List(t.Context(), metav1.ListOptions{FieldSelector: "spec.image=x"}); err == nil {
		t.Error("the storage version's client accepted spec.image, which only v1 selects")
	}
	resp, body = rc.do(req{method: http.MethodGet, path: v1 + "?watch=1&fieldSelector=spec.size%3D1"})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("watch with spec.size: %s; want 400", summary(resp.StatusCode, body))
	}

	var all []string
	cont := ""
	for page := 0; ; page++ {
		resp, body := rc.do(req{method: http.MethodGet, path: v1 + "?limit=2&continue=" + cont})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("page %d: %s", page, summary(resp.StatusCode, body))
		}
		l := obj(t, body)
		got := names(l)
		if len(got) > 2 {
			t.Fatalf("page %d has %d items; limit 2", page, len(got))
		}
		all = append(all, got...)
		cont, _ = l["metadata"].(map[string]any)["continue"].(string)
		if cont == "" {
			break
		}
		if page > 3 {
			t.Fatal("no end to the pages")
		}
	}
	if !slices.Equal(all, []string{"g0", "g1", "g2"}) {
		t.Errorf("pages gave %v; want g0 g1 g2", all)
	}
}

// TestCustomKindScaleOfAppliedReplicas: a write of the scale subresource
// of a custom kind whose spec replicas were applied is stored, and keeps
// the apply's managedFields (memcluster does not record a custom kind's
// scale writes).
func TestCustomKindScaleOfAppliedReplicas(t *testing.T) {
	c, _ := newTestCluster(t)
	k := CustomKind{Group: "example.com", Kind: "Pool", Plural: "pools", TypeConverter: managedfields.NewDeducedTypeConverter(),
		Versions: []CustomVersion{{Name: "v1", Served: true, Storage: true, Status: true,
			Scale: &CustomScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}}}}
	if _, err := AddCustomKind(c, k); err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	const path = "/apis/example.com/v1/namespaces/ns/pools/p"
	resp, body := rc.do(req{method: http.MethodPatch, path: path + "?fieldManager=a", contentType: "application/apply-patch+yaml",
		body: "apiVersion: example.com/v1\nkind: Pool\nmetadata: {name: p}\nspec: {replicas: 2}\n"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("apply: %s %s", summary(resp.StatusCode, body), body)
	}
	resp, body = rc.do(req{method: http.MethodPut, path: path + "/scale",
		body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"p","namespace":"ns"},"spec":{"replicas":5}}`})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scale: %s %s", summary(resp.StatusCode, body), body)
	}
	_, body = rc.do(req{method: http.MethodGet, path: path})
	got := obj(t, body)
	if r := got["spec"].(map[string]any)["replicas"]; r != float64(5) {
		t.Errorf("replicas after the scale write: %v; want 5", r)
	}
	mf, _ := got["metadata"].(map[string]any)["managedFields"].([]any)
	if len(mf) != 1 || mf[0].(map[string]any)["manager"] != "a" {
		t.Errorf("managedFields after the scale write: %v; want the apply's only", mf)
	}
}

// TestCustomKindApplyInAnotherVersion: server-side apply and updates in a
// version other than the storage one are served, and recorded under the
// request's version, as kube-apiserver records a custom resource's writes
// per version; the field managers of both versions see each other's
// fields (the versions convert by their apiVersion alone).
func TestCustomKindApplyInAnotherVersion(t *testing.T) {
	c, _ := newTestCluster(t)
	k := gadgets(nil)
	k.TypeConverter = managedfields.NewDeducedTypeConverter()
	if _, err := AddCustomKind(c, k); err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, c)
	const v1 = "/apis/example.com/v1/namespaces/ns/gadgets/g"
	const v2 = "/apis/example.com/v2/namespaces/ns/gadgets/g"
	apply := func(path, manager, version, spec string, force bool) (int, map[string]any) {
		t.Helper()
		q := "?fieldManager=" + manager
		if force {
			q += "&force=true"
		}
		resp, body := rc.do(req{method: http.MethodPatch, path: path + q, contentType: "application/apply-patch+yaml",
			body: "apiVersion: example.com/" + version + "\nkind: Gadget\nmetadata: {name: g}\nspec: " + spec + "\n"})
		return resp.StatusCode, obj(t, body)
	}
	entries := func(o map[string]any) []string {
		var out []string
		mf, _ := o["metadata"].(map[string]any)["managedFields"].([]any)
		for _, e := range mf {
			e := e.(map[string]any)
			out = append(out, fmt.Sprintf("%s/%s/%s", e["manager"], e["operation"], e["apiVersion"]))
		}
		return out
	}
	code, got := apply(v1, "a", "v1", "{image: x, size: 2}", false)
	if code != http.StatusCreated {
		t.Fatalf("apply in v1: %d %v", code, got)
	}
	if got["apiVersion"] != "example.com/v1" || !slices.Equal(entries(got), []string{"a/Apply/example.com/v1"}) {
		t.Errorf("apply in v1 answered %v with managedFields %v; want v1, a's entry in v1", got["apiVersion"], entries(got))
	}
	// The stored object is v2's; read in v2, a's entry stays in v1.
	resp, body := rc.do(req{method: http.MethodGet, path: v2})
	if got := obj(t, body); resp.StatusCode != http.StatusOK || got["apiVersion"] != "example.com/v2" || !slices.Equal(entries(got), []string{"a/Apply/example.com/v1"}) {
		t.Errorf("read in v2: %s %v %v", summary(resp.StatusCode, body), got["apiVersion"], entries(got))
	}
	// An apply in v2 of a's field conflicts with a.
	code, got = apply(v2, "b", "v2", "{image: y}", false)
	if code != http.StatusConflict || !strings.Contains(fmt.Sprint(got["message"]), `conflict with "a": .spec.image`) {
		t.Errorf("apply of a's field in v2: %d %v; want 409 naming a", code, got["message"])
	}
	code, got = apply(v2, "b", "v2", "{image: y}", true)
	if code != http.StatusOK || !slices.Equal(entries(got), []string{"a/Apply/example.com/v1", "b/Apply/example.com/v2"}) {
		t.Errorf("forced apply in v2: %d %v", code, entries(got))
	}
	// A patch in v1 is recorded in v1.
	resp, body = rc.do(req{method: http.MethodPatch, path: v1 + "?fieldManager=p", contentType: "application/merge-patch+json", body: `{"spec":{"size":3}}`})
	if got := obj(t, body); resp.StatusCode != http.StatusOK || !slices.Contains(entries(got), "p/Update/example.com/v1") {
		t.Errorf("merge patch in v1: %s %v", summary(resp.StatusCode, body), entries(got))
	}
	// A patch of another version's kind is refused, as kube-apiserver does.
	if code, got := apply(v1, "a", "v2", "{image: x}", false); code != http.StatusBadRequest ||
		!strings.Contains(fmt.Sprint(got["message"]), "invalid object type: example.com/v2, Kind=Gadget") {
		t.Errorf("apply of v2 to the v1 endpoint: %d %v", code, got["message"])
	}
}
