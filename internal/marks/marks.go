// Package marks remembers, per object, the resourceVersions that this
// process's writes have replaced and that a cache may still hold: the
// marks by which ctrlkit's controllers wait for their own writes (see
// package internal/writes). Both the informer caches of package informer
// and the controller-runtime adapter's keep them here.
package marks

import (
	"slices"
	"sync"
)

// max bounds the versions remembered per key: a sync writes an object a
// few times at most before it waits for the events.
const max = 8

// Set is the marks of the objects of one cache, by key K. Its zero value
// is ready; it is safe for concurrent use.
type Set[K comparable] struct {
	mu       sync.Mutex
	replaced map[K][]string
}

// Add marks replaced (a version a write replaced) as stale for key.
// Several writes in a row each name the version they replaced (the second
// one's may be the first one's result): every one of them counts as stale
// until the cache holds a version past them all.
func (s *Set[K]) Add(key K, replaced string) {
	if replaced == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replaced == nil {
		s.replaced = make(map[K][]string)
	}
	m := s.replaced[key]
	if slices.Contains(m, replaced) {
		return
	}
	m = append(m, replaced)
	if len(m) > max {
		m = slices.Clone(m[len(m)-max:])
	}
	s.replaced[key] = m
}

// Behind reports whether the version cached returns (ok false: the cache
// does not hold key) is a marked one; once it is not, the marks of key go
// (unless a write has been marked meanwhile). cached is called only when
// key has marks.
func (s *Set[K]) Behind(key K, cached func() (rv string, ok bool)) bool {
	s.mu.Lock()
	m := s.replaced[key]
	s.mu.Unlock()
	if len(m) == 0 {
		return false
	}
	if rv, ok := cached(); ok && slices.Contains(m, rv) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.replaced[key]; len(cur) == len(m) && (len(cur) == 0 || &cur[0] == &m[0]) {
		delete(s.replaced, key)
	}
	return false
}

// Forget drops the marks of key: a deleted object is nobody's stale copy.
func (s *Set[K]) Forget(key K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.replaced, key)
}
