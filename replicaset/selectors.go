package replicaset

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// selectorCache remembers the parsed selector of each ReplicaSet, keyed by
// the identity of its LabelSelector: readers hand out immutable objects,
// so the same pointer means the same selector, and a new version of the
// ReplicaSet brings a new pointer. Parsing allocates a dozen times; a hit
// allocates nothing.
type selectorCache struct {
	mu sync.Mutex
	m  map[types.NamespacedName]parsedSelector
}

type parsedSelector struct {
	src *metav1.LabelSelector
	sel labels.Selector
}

func (c *selectorCache) get(key types.NamespacedName, src *metav1.LabelSelector) (labels.Selector, error) {
	c.mu.Lock()
	p, ok := c.m[key]
	c.mu.Unlock()
	if ok && p.src == src && src != nil {
		return p.sel, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(src)
	if err != nil || src == nil {
		return sel, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[types.NamespacedName]parsedSelector)
	}
	c.m[key] = parsedSelector{src: src, sel: sel}
	c.mu.Unlock()
	return sel, nil
}

func (c *selectorCache) forget(key types.NamespacedName) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}
