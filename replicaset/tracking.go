package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/informer"
)

// trackingClient marks the ReplicaSet cache after each successful status
// write ([informer.Cache.Wrote]), so that the [Controller] does not sync
// the ReplicaSet again from the version it has just replaced: it waits
// for the write's event, which enqueues the ReplicaSet anyway. The same
// marks, set by a Deployment controller sharing the cache, make it wait
// for the event of a scale instead of writing its status on the old
// version and getting a Conflict. The cached version is read before the
// write: read after, it could already be the write's own event.
type trackingClient struct {
	Client
	rss *informer.Cache[*appsv1.ReplicaSet]
}

func (c trackingClient) UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	key := rsKey(rs)
	var replaced string
	if cached, err := c.rss.Get(key); err == nil {
		replaced = cached.ResourceVersion
	}
	out, err := c.Client.UpdateReplicaSetStatus(ctx, rs)
	// An update that changed nothing stored no new version and sends no
	// event: waiting for one would wait forever.
	if err == nil && out != nil && out.ResourceVersion != replaced {
		c.rss.Wrote(key, replaced)
	}
	return out, err
}
