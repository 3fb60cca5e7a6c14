package informer_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
)

func TestWroteBehind(t *testing.T) {
	at := func(rv string) *corev1.Pod {
		return pod("ns", "a", func(p *corev1.Pod) { p.ResourceVersion = rv })
	}
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	mustAdd := func(p *corev1.Pod) {
		t.Helper()
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if c.Behind(key) {
		t.Fatal("Behind of a missing key without a write")
	}
	mustAdd(at("1"))
	c.Wrote(key, "1")
	if !c.Behind(key) {
		t.Fatal("Behind = false right after a write replacing the cached version")
	}
	if !c.Behind(key) {
		t.Fatal("Behind = false on a second look, with no event in between")
	}
	mustAdd(at("2")) // the write's event
	if c.Behind(key) {
		t.Fatal("Behind = true after the write's event")
	}

	// The event may overtake the write's response: the mark then names a
	// version the cache has already left behind.
	mustAdd(at("3"))
	c.Wrote(key, "2")
	if c.Behind(key) {
		t.Fatal("Behind = true for a write older than the cached version")
	}

	// A mark does not outlive the object.
	c.Wrote(key, "3")
	if !c.Behind(key) {
		t.Fatal("Behind = false after a write replacing version 3")
	}
	c.Delete(key)
	mustAdd(at("3")) // a new object that happens to carry the same version
	if c.Behind(key) {
		t.Fatal("Behind = true for an object created after the marked one was deleted")
	}

	c.Wrote(key, "") // a write without a base version marks nothing
	if c.Behind(key) {
		t.Fatal("Behind = true after a write with no replaced version")
	}
}

// Two writes in a row (the second based on the first's result): the cache
// is behind until it holds a version past both, not only past the first
// (e2e soak seed 4019).
func TestWroteTwice(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	add := func(rv string) {
		t.Helper()
		if err := c.Add(pod("ns", "a", func(p *corev1.Pod) { p.ResourceVersion = rv })); err != nil {
			t.Fatal(err)
		}
	}
	add("1")
	c.Wrote(key, "1") // 1 → 2
	c.Wrote(key, "2") // 2 → 3, based on the first write's result
	for _, step := range []struct {
		rv     string
		behind bool
	}{{"1", true}, {"2", true}, {"3", false}} {
		add(step.rv)
		if got := c.Behind(key); got != step.behind {
			t.Errorf("cache at %s: Behind = %t; want %t", step.rv, got, step.behind)
		}
	}
	add("3")
	c.Wrote(key, "3")
	c.Wrote(key, "3") // the same mark twice counts once
	add("4")
	if c.Behind(key) {
		t.Errorf("Behind = true past the only marked version")
	}
}
