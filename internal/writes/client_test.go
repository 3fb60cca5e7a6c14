package writes

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
)

// statusOnly is a ReplicaSetClient whose status writes return err.
type statusOnly struct {
	ReplicaSetClient
	err error
}

func (s statusOnly) UpdateReplicaSetStatus(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	if s.err != nil {
		return nil, s.err
	}
	out := rs.DeepCopy()
	out.ResourceVersion += "+1"
	return out, nil
}

func TestTrackingClientMarksTheCache(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", ResourceVersion: "5"}}
	key := types.NamespacedName{Namespace: "ns", Name: "rs"}
	c := informer.NewCache(informer.CacheConfig[*appsv1.ReplicaSet]{})
	if err := c.Add(rs); err != nil {
		t.Fatal(err)
	}
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "rs", nil)
	if _, err := TrackReplicaSets(statusOnly{err: conflict}, Informers{ReplicaSets: c}).UpdateReplicaSetStatus(context.Background(), rs); err == nil {
		t.Fatal("the failing write succeeded")
	}
	if c.Behind(key) {
		t.Error("Behind after a failed write")
	}
	written, err := TrackReplicaSets(statusOnly{}, Informers{ReplicaSets: c}).UpdateReplicaSetStatus(context.Background(), rs)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Behind(key) {
		t.Error("not Behind after a successful write the cache has not seen")
	}
	if err := c.Add(written); err != nil {
		t.Fatal(err)
	}
	if c.Behind(key) {
		t.Error("Behind after the write's event")
	}
}

// noop is a ReplicaSetClient whose status writes change nothing: the stored version
// keeps its resourceVersion, as an apiserver does for an update that
// changes nothing.
type noop struct{ ReplicaSetClient }

func (noop) UpdateReplicaSetStatus(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return rs.DeepCopy(), nil
}

// A write that stored no new version sends no event: marking the cache
// would make the controller wait forever.
func TestTrackingClientIgnoresNoopWrites(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", ResourceVersion: "5"}}
	c := informer.NewCache(informer.CacheConfig[*appsv1.ReplicaSet]{})
	if err := c.Add(rs); err != nil {
		t.Fatal(err)
	}
	if _, err := TrackReplicaSets(noop{}, Informers{ReplicaSets: c}).UpdateReplicaSetStatus(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	if c.Behind(types.NamespacedName{Namespace: "ns", Name: "rs"}) {
		t.Error("Behind after a write that stored no new version")
	}
}
