package replicaset

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// selectorCache remembers the compiled selector of each ReplicaSet, keyed
// by the identity of its LabelSelector: readers hand out immutable objects,
// so the same pointer means the same selector, and a new version of the
// ReplicaSet brings a new pointer. Parsing and compiling allocate a dozen
// times; a hit allocates nothing.
type selectorCache struct {
	mu sync.Mutex
	m  map[types.NamespacedName]compiledSelector
}

type compiledSelector struct {
	src *metav1.LabelSelector
	m   *labelMatcher
}

func (c *selectorCache) get(key types.NamespacedName, src *metav1.LabelSelector) (*labelMatcher, error) {
	c.mu.Lock()
	p, ok := c.m[key]
	c.mu.Unlock()
	if ok && p.src == src && src != nil {
		return p.m, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(src)
	if err != nil {
		return nil, err
	}
	m := compileSelector(sel)
	if src == nil {
		return &m, nil
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[types.NamespacedName]compiledSelector)
	}
	c.m[key] = compiledSelector{src: src, m: &m}
	c.mu.Unlock()
	return &m, nil
}

func (c *selectorCache) forget(key types.NamespacedName) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}
