package replicaset

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/indexes"
)

// podAppender is what [PodCache] offers beyond [PodCache.ListByController]: the
// same lists, appended to the caller's slice. The Reconciler reads a
// ReplicaSet's pods into a buffer it reuses, so that a sync of a settled
// ReplicaSet allocates nothing for them.
type podAppender interface {
	appendByController(dst []*corev1.Pod, namespace string, uid types.UID) ([]*corev1.Pod, error)
}

var _ podAppender = (*PodCache)(nil)

// appendByController is PodCache.ListByController, appending to dst.
func (p *PodCache) appendByController(dst []*corev1.Pod, namespace string, uid types.UID) ([]*corev1.Pod, error) {
	if uid == "" {
		return p.c.AppendByIndex(dst, indexes.Orphans, namespace)
	}
	return p.c.AppendByIndex(dst, informer.IndexControllerUID, string(uid))
}

// podBuffers are the Reconciler's reusable pod lists, one per sync in
// progress.
type podBuffers struct{ pool sync.Pool }

// get returns an empty buffer.
func (b *podBuffers) get() *[]*corev1.Pod {
	if buf, ok := b.pool.Get().(*[]*corev1.Pod); ok {
		return buf
	}
	return new([]*corev1.Pod)
}

// put returns buf, cleared so that it keeps no pod alive.
func (b *podBuffers) put(buf *[]*corev1.Pod) {
	clear(*buf)
	*buf = (*buf)[:0]
	b.pool.Put(buf)
}
