// Package cachemarks reaches the write marks that package informer's
// caches keep (package internal/marks) from this repository's write
// tracker (package internal/writes) and tests: informer.Cache keeps them
// out of its API, and package informer sets Wrote and Behind when it is
// initialized.
package cachemarks

import "k8s.io/apimachinery/pkg/types"

// Wrote tells cache, an *informer.Cache[T], that this process wrote the
// object at key through the API, replacing the version whose
// resourceVersion is replaced (the one the write was based on). Until an
// event brings a version it has not been told of this way, Behind reports
// true for key.
var Wrote func(cache any, key types.NamespacedName, replaced string)

// Behind reports whether the object cache (an *informer.Cache[T]) holds at
// key is a version that this process has already replaced (see Wrote).
var Behind func(cache any, key types.NamespacedName) bool
