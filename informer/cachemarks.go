package informer

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/cachemarks"
)

// marked is what every *Cache[T] does for package internal/cachemarks.
type marked interface {
	wrote(key types.NamespacedName, replaced string)
	behind(key types.NamespacedName) bool
}

func init() {
	cachemarks.Wrote = func(cache any, key types.NamespacedName, replaced string) {
		cache.(marked).wrote(key, replaced)
	}
	cachemarks.Behind = func(cache any, key types.NamespacedName) bool {
		return cache.(marked).behind(key)
	}
}
