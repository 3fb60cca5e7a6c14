package deployment

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
)

// ReplicaSetsByController is an optional extension of a
// [ReplicaSetLister]. When the Reconciler's lister implements it, a sync
// reads only the ReplicaSets its decision can depend on: those the
// Deployment controls, the namespace's orphans, and (only when the plan
// creates a ReplicaSet) the one that already holds the new name. Upstream
// lists the whole namespace on every sync, which makes n Deployments in
// one namespace cost O(n²); with this extension a sync costs what the
// Deployment owns. The decisions are the same; the one visible difference
// is the order of a sync's ownership patches: releases of owned
// ReplicaSets come before adoptions of orphans, where a full listing
// interleaves them in listing order (upstream's is a map's, unspecified).
type ReplicaSetsByController interface {
	// ListByController returns the ReplicaSets whose controller reference
	// has uid (callers filter by namespace), or with an empty uid those of
	// namespace without a controller.
	ListByController(namespace string, uid types.UID) ([]*appsv1.ReplicaSet, error)
	// Get returns the ReplicaSet at key, or an error for which
	// apierrors.IsNotFound holds.
	Get(key types.NamespacedName) (*appsv1.ReplicaSet, error)
}

// ReplicaSetCache adapts an informer cache of ReplicaSets to
// [ReplicaSetLister] and [ReplicaSetsByController]. [NewController] uses
// one; build one with [NewReplicaSetCache] to give a Reconciler of your own
// the same indexed reads.
type ReplicaSetCache struct {
	c *informer.Cache[*appsv1.ReplicaSet]
}

// orphanIndex indexes ReplicaSets without a controller by namespace.
const orphanIndex = "deployment.ctrlkit/orphans"

// NewReplicaSetCache returns a ReplicaSetCache over c, adding an index of
// orphan ReplicaSets to c unless it is already there.
func NewReplicaSetCache(c *informer.Cache[*appsv1.ReplicaSet]) (*ReplicaSetCache, error) {
	if c == nil {
		return nil, fmt.Errorf("deployment: NewReplicaSetCache: nil cache")
	}
	if !slices.Contains(c.IndexNames(), orphanIndex) {
		err := c.AddIndex(orphanIndex, func(rs *appsv1.ReplicaSet) ([]string, error) {
			if metav1.GetControllerOfNoCopy(rs) != nil {
				return nil, nil
			}
			return []string{rs.Namespace}, nil
		})
		// Two callers may race to add it; losing that race is fine.
		if err != nil && !slices.Contains(c.IndexNames(), orphanIndex) {
			return nil, fmt.Errorf("deployment: %w", err)
		}
	}
	return &ReplicaSetCache{c: c}, nil
}

// List lists the cached ReplicaSets of namespace that match selector.
func (rc *ReplicaSetCache) List(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	return rc.c.List(namespace, selector)
}

// ListByController lists the cached ReplicaSets controlled by uid (any
// namespace), or with an empty uid the orphans of namespace.
func (rc *ReplicaSetCache) ListByController(namespace string, uid types.UID) ([]*appsv1.ReplicaSet, error) {
	if uid == "" {
		return rc.c.ByIndex(orphanIndex, namespace)
	}
	return rc.c.ByIndex(informer.IndexControllerUID, string(uid))
}

// Get returns the cached ReplicaSet at key.
func (rc *ReplicaSetCache) Get(key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return rc.c.Get(key)
}

var (
	_ ReplicaSetLister        = (*ReplicaSetCache)(nil)
	_ ReplicaSetsByController = (*ReplicaSetCache)(nil)
)
