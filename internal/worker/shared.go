package worker

import (
	"context"
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Gates holds the feature gates of a running Reconciler; the zero value
// holds v1.37's defaults. It is safe for concurrent use.
type Gates struct {
	p atomic.Pointer[features.Gates]
}

// Load returns the gates syncs decide with.
func (h *Gates) Load() features.Gates {
	if g := h.p.Load(); g != nil {
		return *g
	}
	return features.Gates{}
}

// Store switches the gates for the syncs that start afterwards; an
// invalid setting is an error (prefixed with pkg), and changes nothing.
func (h *Gates) Store(pkg string, g features.Gates) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("%s: SetFeatureGates: %w", pkg, err)
	}
	h.p.Store(&g)
	return nil
}

// Resolve returns the object a controller reference of kind points to in
// namespace, if get has it with the same UID (upstream
// resolveControllerRef); false otherwise.
func Resolve[T any, PT interface {
	*T
	metav1.Object
}](ctx context.Context, get reconcile.Getter[PT], namespace string, ref *metav1.OwnerReference, kind string) (PT, bool) {
	if ref == nil || ref.Kind != kind || get == nil {
		return nil, false
	}
	obj, err := get.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name})
	if err != nil || obj == nil || obj.GetUID() != ref.UID {
		return nil, false
	}
	return obj, true
}
