package informer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/informer"
)

func TestCacheControllerIndexFollowsUpdates(t *testing.T) {
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	mustAdd(t, c, pod("ns", "a", ownedBy("rs1")), pod("ns", "b", ownedBy("rs1")), pod("ns", "c"))

	check := func(step string, want map[string][]string) {
		t.Helper()
		for uid, wantKeys := range want {
			got, err := c.ByIndex(informer.IndexControllerUID, uid)
			if err != nil {
				t.Fatalf("%s: ByIndex(%q) error = %v", step, uid, err)
			}
			if diff := cmp.Diff(wantKeys, keys(got)); diff != "" {
				t.Errorf("%s: ByIndex(controller-uid, %q) mismatch (-want +got):\n%s", step, uid, diff)
			}
		}
	}
	check("initial", map[string][]string{"rs1": {"ns/a", "ns/b"}, "rs2": {}, "other": {}})

	mustAdd(t, c, pod("ns", "a", ownedBy("rs2"))) // the controller changes
	check("a moved", map[string][]string{"rs1": {"ns/b"}, "rs2": {"ns/a"}})

	mustAdd(t, c, pod("ns", "b"))                 // orphaned
	mustAdd(t, c, pod("ns", "c", ownedBy("rs2"))) // adopted
	check("b orphaned, c adopted", map[string][]string{"rs1": {}, "rs2": {"ns/a", "ns/c"}})

	c.Delete(nn("ns", "a"))
	check("a deleted", map[string][]string{"rs2": {"ns/c"}})

	// A controller whose last pod leaves, then gains one at once.
	mustAdd(t, c, pod("ns", "x", ownedBy("rs3")), pod("ns", "x"), pod("ns", "y", ownedBy("rs3")))
	check("rs3 emptied and refilled", map[string][]string{"rs3": {"ns/y"}})

	got, err := c.ByIndex(informer.IndexNamespace, "ns")
	if err != nil {
		t.Fatalf("ByIndex(namespace) error = %v", err)
	}
	if diff := cmp.Diff([]string{"ns/b", "ns/c", "ns/x", "ns/y"}, keys(got)); diff != "" {
		t.Errorf("ByIndex(namespace, ns) mismatch (-want +got):\n%s", diff)
	}
}

func byApp(p *corev1.Pod) ([]string, error) {
	if p.Labels["app"] == "" {
		return nil, nil
	}
	return []string{p.Labels["app"]}, nil
}

func TestCacheUserIndex(t *testing.T) {
	failing := errors.New("boom")
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{
		Indexers: map[string]informer.IndexFunc[*corev1.Pod]{
			"app": byApp,
			"tiers": func(p *corev1.Pod) ([]string, error) {
				if p.Labels["fail"] != "" {
					return nil, failing
				}
				return strings.Fields(p.Labels["tiers"]), nil
			},
		},
	})
	a := pod("ns", "a", labeled("app", "web", "tiers", "front front back"))
	mustAdd(t, c, a, pod("ns", "b", labeled("app", "web")), pod("ns", "c", labeled("app", "db", "tiers", "back")))

	// An index error rejects the write and keeps the previous version.
	err := c.Add(pod("ns", "a", labeled("app", "db", "fail", "1")))
	if !errors.Is(err, failing) {
		t.Fatalf("Add(with failing index) = %v; want an error wrapping %v", err, failing)
	}
	if got, _ := c.Get(nn("ns", "a")); got != a {
		t.Errorf("after a failed Add over it, Get(ns/a) = %v; want the previous pod", got)
	}

	for _, tc := range []struct{ index, value string }{
		{"app", "web"}, {"app", "db"}, {"tiers", "front"}, {"tiers", "back"},
	} {
		got, err := c.ByIndex(tc.index, tc.value)
		if err != nil {
			t.Fatalf("ByIndex(%q, %q) error = %v", tc.index, tc.value, err)
		}
		want := map[string][]string{
			"web": {"ns/a", "ns/b"}, "db": {"ns/c"}, "front": {"ns/a"}, "back": {"ns/a", "ns/c"},
		}[tc.value]
		if diff := cmp.Diff(want, keys(got)); diff != "" {
			t.Errorf("ByIndex(%q, %q) mismatch (-want +got):\n%s", tc.index, tc.value, diff)
		}
	}
	if _, err := c.ByIndex("nope", "x"); err == nil {
		t.Error("ByIndex(unknown index) error = nil; want an error")
	}
	if diff := cmp.Diff([]string{"namespace", "controller-uid", "app", "tiers"}, c.IndexNames()); diff != "" {
		t.Errorf("IndexNames() mismatch (-want +got):\n%s", diff)
	}
}

func TestCacheAddIndex(t *testing.T) {
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	mustAdd(t, c, pod("ns", "a", labeled("app", "web")), pod("ns", "b", labeled("app", "db")))

	for _, tc := range []struct {
		name  string
		index string
		fn    informer.IndexFunc[*corev1.Pod]
	}{
		{"empty name", "", byApp},
		{"built-in name", informer.IndexNamespace, byApp},
		{"nil func", "x", nil},
		{"func fails on a stored object", "x", func(p *corev1.Pod) ([]string, error) {
			if p.Name == "b" {
				return nil, errors.New("no")
			}
			return nil, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.AddIndex(tc.index, tc.fn); err == nil {
				t.Fatalf("AddIndex(%q) = nil; want an error", tc.index)
			}
			if _, err := c.ByIndex("x", ""); err == nil {
				t.Error("a failed AddIndex left an index behind")
			}
		})
	}

	// Added late, the index covers the objects already stored.
	if err := c.AddIndex("app", byApp); err != nil {
		t.Fatalf("AddIndex(app) = %v", err)
	}
	if err := c.AddIndex("app", byApp); err == nil {
		t.Error("AddIndex(app) twice = nil; want an error")
	}
	got, err := c.ByIndex("app", "web")
	if err != nil {
		t.Fatalf("ByIndex(app, web) error = %v", err)
	}
	if diff := cmp.Diff([]string{"ns/a"}, keys(got)); diff != "" {
		t.Errorf("ByIndex(app, web) mismatch (-want +got):\n%s", diff)
	}
}

func TestNewCacheInvalidIndexers(t *testing.T) {
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{
		Indexers: map[string]informer.IndexFunc[*corev1.Pod]{"controller-uid": byApp},
	})
	if err := c.Add(pod("ns", "a")); err == nil {
		t.Error("Add on a cache with an invalid index config = nil; want the config error")
	}
	if err := c.Replace(nil); err == nil {
		t.Error("Replace on a cache with an invalid index config = nil; want the config error")
	}
}
