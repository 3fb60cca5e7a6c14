package e2e

import (
	"context"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// recordingClient is the controllers' client; it remembers the pods the
// ReplicaSet controller deleted, so that the checks can tell a deletion it
// decided from a lost pod.
type recordingClient struct {
	memcluster.ControllerClient
	mu     sync.Mutex
	dels   map[types.UID]bool
	failed map[types.UID]int32 // failed pod creations, by ReplicaSet UID
}

var (
	_ replicaset.Client = (*recordingClient)(nil)
	_ deployment.Client = (*recordingClient)(nil)
)

func newRecordingClient(c *memcluster.Cluster) *recordingClient {
	return &recordingClient{ControllerClient: memcluster.ControllerClient{Cluster: c}, dels: map[types.UID]bool{}, failed: map[types.UID]int32{}}
}

// CreatePod creates, and counts failures by owner: a failure may be a
// lost response, the pod created all the same, and the controller then
// rightly creates another (upstream does the same), so each failure allows
// the ReplicaSet one pod beyond its spec.
func (r *recordingClient) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out, err := r.ControllerClient.CreatePod(ctx, pod)
	if err != nil {
		r.mu.Lock()
		r.failed[controllerUID(pod)]++
		r.mu.Unlock()
	}
	return out, err
}

// failedCreates returns the number of failed pod creations by ReplicaSet.
func (r *recordingClient) failedCreates() map[types.UID]int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.failed)
}

// DeletePod records uid, then deletes.
func (r *recordingClient) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	r.mu.Lock()
	r.dels[uid] = true
	r.mu.Unlock()
	return r.ControllerClient.DeletePod(ctx, namespace, name, uid)
}

// deleted returns the UIDs of the pods the controller asked to delete.
func (r *recordingClient) deleted() map[types.UID]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.dels)
}
