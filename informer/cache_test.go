package informer_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
)

// Interfaces as the controller packages declare them; a Cache must satisfy
// them with no adapter.
type (
	replicaSetGetter interface {
		Get(key types.NamespacedName) (*appsv1.ReplicaSet, error)
	}
	podLister interface {
		List(namespace string, selector labels.Selector) ([]*corev1.Pod, error)
	}
)

var (
	_ replicaSetGetter = (*informer.Cache[*appsv1.ReplicaSet])(nil)
	_ podLister        = (*informer.Cache[*corev1.Pod])(nil)
)

func TestCacheGetListDelete(t *testing.T) {
	var c informer.Cache[*corev1.Pod] // the zero value is usable
	a := pod("ns1", "a", labeled("app", "web"))
	b := pod("ns1", "b", labeled("app", "db"))
	x := pod("ns2", "x", labeled("app", "web"))
	mustAdd(t, &c, a, b, x)

	got, err := c.Get(nn("ns1", "b"))
	if err != nil || got != b {
		t.Fatalf("Get(ns1/b) = %v, %v; want the stored pod, nil", got, err)
	}
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	for _, tc := range []struct {
		name      string
		namespace string
		selector  labels.Selector
		want      []string
	}{
		{"one namespace", "ns1", nil, []string{"ns1/a", "ns1/b"}},
		{"all namespaces", "", labels.Everything(), []string{"ns1/a", "ns1/b", "ns2/x"}},
		{"selector in namespace", "ns1", web, []string{"ns1/a"}},
		{"selector everywhere", "", web, []string{"ns1/a", "ns2/x"}},
		{"nothing", "", labels.Nothing(), []string{}},
		{"unknown namespace", "nope", nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.List(tc.namespace, tc.selector)
			if err != nil {
				t.Fatalf("List() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, keys(got)); diff != "" {
				t.Errorf("List(%q, %v) mismatch (-want +got):\n%s", tc.namespace, tc.selector, diff)
			}
		})
	}

	if old, ok := c.Delete(nn("ns1", "a")); !ok || old != a {
		t.Fatalf("Delete(ns1/a) = %v, %v; want the stored pod, true", old, ok)
	}
	if _, ok := c.Delete(nn("ns1", "a")); ok {
		t.Error("second Delete(ns1/a) reported true")
	}
	if got, want := c.Len(), 2; got != want {
		t.Errorf("Len() = %d; want %d", got, want)
	}
	wantKeys := []types.NamespacedName{nn("ns1", "b"), nn("ns2", "x")}
	if diff := cmp.Diff(wantKeys, c.Keys()); diff != "" {
		t.Errorf("Keys() mismatch (-want +got):\n%s", diff)
	}
}

func TestCacheGetNotFound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     informer.CacheConfig[*appsv1.ReplicaSet]
		wantMsg string
	}{
		{"guessed resource", informer.CacheConfig[*appsv1.ReplicaSet]{}, `replicasets "web" not found`},
		{"configured resource", informer.CacheConfig[*appsv1.ReplicaSet]{
			Resource: schema.GroupResource{Group: "apps", Resource: "replicasets"}}, `replicasets.apps "web" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := informer.NewCache(tc.cfg)
			got, err := c.Get(nn("default", "web"))
			if !apierrors.IsNotFound(err) || got != nil {
				t.Fatalf("Get(missing) = %v, %v; want nil, a NotFound error", got, err)
			}
			if err.Error() != tc.wantMsg {
				t.Errorf("Get(missing) error = %q; want %q", err, tc.wantMsg)
			}
		})
	}
}

func TestCacheBadInput(t *testing.T) {
	var nilPod *corev1.Pod
	for _, tc := range []struct {
		name    string
		obj     *corev1.Pod
		wantErr string
	}{
		{"nil pointer", nilPod, "nil object"},
		{"no name", pod("ns", ""), `has no name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
			mustAdd(t, c, pod("ns", "keep"))
			for op, write := range map[string]func(*corev1.Pod) error{
				"Add":     c.Add,
				"Replace": func(p *corev1.Pod) error { return c.Replace([]*corev1.Pod{pod("ns", "new"), p}) },
			} {
				err := write(tc.obj)
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s(%s) = %v; want an error containing %q", op, tc.name, err, tc.wantErr)
				}
			}
			if diff := cmp.Diff([]types.NamespacedName{nn("ns", "keep")}, c.Keys()); diff != "" {
				t.Errorf("cache changed by rejected writes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCacheReplace(t *testing.T) {
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{
		Indexers: map[string]informer.IndexFunc[*corev1.Pod]{"app": byApp},
	})
	mustAdd(t, c, pod("ns", "gone", ownedBy("rs1"), labeled("app", "web")), pod("ns", "kept", labeled("app", "web")))
	kept := pod("ns", "kept", ownedBy("rs1"), labeled("app", "db"))
	if err := c.Replace([]*corev1.Pod{pod("other", "new"), kept}); err != nil {
		t.Fatalf("Replace() = %v", err)
	}
	if diff := cmp.Diff([]types.NamespacedName{nn("ns", "kept"), nn("other", "new")}, c.Keys()); diff != "" {
		t.Errorf("Keys() after Replace mismatch (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		index, value string
		want         []string
	}{
		{informer.IndexControllerUID, "rs1", []string{"ns/kept"}},
		{"app", "web", []string{}},
		{"app", "db", []string{"ns/kept"}},
		{informer.IndexNamespace, "other", []string{"other/new"}},
	} {
		got, err := c.ByIndex(tc.index, tc.value)
		if err != nil {
			t.Fatalf("ByIndex(%q, %q) error = %v", tc.index, tc.value, err)
		}
		if diff := cmp.Diff(tc.want, keys(got)); diff != "" {
			t.Errorf("ByIndex(%q, %q) mismatch (-want +got):\n%s", tc.index, tc.value, diff)
		}
	}
}

func TestCacheAppendDoesNotAllocate(t *testing.T) {
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	for i := range 100 {
		mustAdd(t, c, pod("ns", fmt.Sprint(i), labeled("app", fmt.Sprint(i%2)), ownedBy("rs")))
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "1"})
	dst := make([]*corev1.Pod, 0, 100)
	for name, f := range map[string]func(){
		"AppendList":          func() { dst = c.AppendList(dst[:0], "ns", nil) },
		"AppendList/selector": func() { dst = c.AppendList(dst[:0], "ns", sel) },
		"AppendList/all":      func() { dst = c.AppendList(dst[:0], "", sel) },
		"AppendByIndex":       func() { dst, _ = c.AppendByIndex(dst[:0], informer.IndexControllerUID, "rs") },
		"Get":                 func() { _, _ = c.Get(nn("ns", "7")) },
	} {
		if got := testing.AllocsPerRun(50, f); got != 0 {
			t.Errorf("%s allocates %v times per call; want 0", name, got)
		}
	}
}

// TestCacheMatchesReference drives a Cache and a naive map-based model with
// the same random writes and compares every query after each one. Buckets
// grow past the size at which they switch to a position map.
func TestCacheMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{
		Indexers: map[string]informer.IndexFunc[*corev1.Pod]{"app": byApp},
	})
	model := map[types.NamespacedName]*corev1.Pod{}
	namespaces := []string{"", "a", "b"}
	uids := []types.UID{"", "u1", "u2"}
	apps := []string{"", "x", "y"}
	randomPod := func() *corev1.Pod {
		opts := []func(*corev1.Pod){labeled("app", apps[rng.IntN(len(apps))])}
		if uid := uids[rng.IntN(len(uids))]; uid != "" {
			opts = append(opts, ownedBy(uid))
		}
		return pod(namespaces[rng.IntN(len(namespaces))], fmt.Sprint(rng.IntN(80)), opts...)
	}
	for step := range 2000 {
		switch op := rng.IntN(10); {
		case op < 6:
			p := randomPod()
			mustAdd(t, c, p)
			model[nn(p.Namespace, p.Name)] = p
		case op < 9:
			p := randomPod()
			key := nn(p.Namespace, p.Name)
			_, ok := c.Delete(key)
			if _, inModel := model[key]; ok != inModel {
				t.Fatalf("step %d: Delete(%s) = %v; model has it: %v", step, key, ok, inModel)
			}
			delete(model, key)
		default:
			var objs []*corev1.Pod
			model = map[types.NamespacedName]*corev1.Pod{}
			for range rng.IntN(150) {
				p := randomPod()
				objs = append(objs, p)
				model[nn(p.Namespace, p.Name)] = p
			}
			if err := c.Replace(objs); err != nil {
				t.Fatalf("step %d: Replace() = %v", step, err)
			}
		}
		compareWithModel(t, step, c, model)
	}
}

func compareWithModel(t *testing.T, step int, c *informer.Cache[*corev1.Pod], model map[types.NamespacedName]*corev1.Pod) {
	t.Helper()
	want := map[string][]string{}
	add := func(query string, p *corev1.Pod) {
		want[query] = append(want[query], p.Namespace+"/"+p.Name)
	}
	for _, p := range model {
		add("ns="+p.Namespace, p)
		add("all", p)
		add("app="+p.Labels["app"], p)
		if len(p.OwnerReferences) > 0 {
			add("uid="+string(p.OwnerReferences[1].UID), p)
		}
	}
	got := map[string][]string{}
	for _, ns := range []string{"", "a", "b"} {
		objs, _ := c.ByIndex(informer.IndexNamespace, ns)
		got["ns="+ns] = keys(objs)
	}
	all, _ := c.List("", nil)
	got["all"] = keys(all)
	for _, app := range []string{"", "x", "y"} {
		var objs []*corev1.Pod
		if app == "" {
			objs, _ = c.List("", labels.SelectorFromSet(labels.Set{"app": ""}))
		} else {
			objs, _ = c.ByIndex("app", app)
		}
		got["app="+app] = keys(objs)
	}
	for _, uid := range []string{"u1", "u2"} {
		objs, _ := c.ByIndex(informer.IndexControllerUID, uid)
		got["uid="+uid] = keys(objs)
	}
	for q := range got {
		w := want[q]
		slices.Sort(w)
		if !slices.Equal(w, got[q]) {
			t.Fatalf("step %d: query %s mismatch (-want +got):\n%s", step, q, cmp.Diff(w, got[q]))
		}
	}
	if c.Len() != len(model) {
		t.Fatalf("step %d: Len() = %d; want %d", step, c.Len(), len(model))
	}
	for key, p := range model {
		if got, err := c.Get(key); err != nil || got != p {
			t.Fatalf("step %d: Get(%s) = %v, %v; want the model's pod", step, key, got, err)
		}
	}
}

func TestCacheConcurrentReadersAndWriters(t *testing.T) {
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range 500 {
				p := pod("ns", fmt.Sprint(i%50), ownedBy(types.UID(fmt.Sprint(w))))
				if i%3 == 0 {
					c.Delete(nn(p.Namespace, p.Name))
					continue
				}
				if err := c.Add(p); err != nil {
					t.Errorf("Add() = %v", err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			var dst []*corev1.Pod
			for range 500 {
				dst = c.AppendList(dst[:0], "ns", nil)
				for _, p := range dst {
					if p.Namespace != "ns" {
						t.Errorf("List(ns) returned %s/%s", p.Namespace, p.Name)
						return
					}
				}
				_, _ = c.ByIndex(informer.IndexControllerUID, "0")
				_, _ = c.Get(nn("ns", "3"))
			}
		})
	}
	wg.Wait()
	got, _ := c.List("", nil)
	if len(got) != c.Len() {
		t.Errorf("len(List()) = %d; Len() = %d", len(got), c.Len())
	}
}
