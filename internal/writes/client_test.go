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

// rsUpdates is a DeploymentClient whose ReplicaSet updates store a new
// version ("<n>+1") unless the update changes nothing (same replicas as
// the version it is based on), as an apiserver answers an update that
// changes nothing: the stored object, at its version, and no event.
type rsUpdates struct {
	DeploymentClient
	stored *appsv1.ReplicaSet
}

func (s *rsUpdates) UpdateReplicaSet(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	if *rs.Spec.Replicas == *s.stored.Spec.Replicas {
		return s.stored.DeepCopy(), nil
	}
	s.stored = rs.DeepCopy()
	s.stored.ResourceVersion += "+1"
	return s.stored.DeepCopy(), nil
}

// A sync that writes a ReplicaSet and then writes the result again with
// nothing changed (based on the first write's version, which the cache has
// not seen) waits for the first write's event only: the second stored no
// new version and sends no event. Marking the version it was based on
// would leave both controllers waiting for an event that never comes.
func TestTrackingClientAWriteThatChangesNothingAfterAnother(t *testing.T) {
	three, five := int32(3), int32(5)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", ResourceVersion: "5"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &three}}
	key := types.NamespacedName{Namespace: "ns", Name: "rs"}
	d := types.NamespacedName{Namespace: "ns", Name: "d"}
	cache := informer.NewCache(informer.CacheConfig[*appsv1.ReplicaSet]{})
	if err := cache.Add(rs); err != nil {
		t.Fatal(err)
	}
	tr := New(Informers{ReplicaSets: cache}, nil)
	client := TrackDeployments(&rsUpdates{stored: rs.DeepCopy()}, tr)
	ctx := Syncing(context.Background(), d)

	scaled := rs.DeepCopy()
	scaled.Spec.Replicas = &five
	first, err := client.UpdateReplicaSet(ctx, scaled)
	if err != nil || first.ResourceVersion != "5+1" {
		t.Fatalf("first write = %v, %v; want version 5+1", first, err)
	}
	again, err := client.UpdateReplicaSet(ctx, first.DeepCopy())
	if err != nil || again.ResourceVersion != first.ResourceVersion {
		t.Fatalf("second write = %v, %v; want the same version %s (nothing changed)", again, err, first.ResourceVersion)
	}
	if behind, err := tr.Behind(context.Background(), d); err != nil || !behind || !cache.Behind(key) {
		t.Fatalf("before the first write's event: tracker behind %v (%v), cache behind %v; want both behind", behind, err, cache.Behind(key))
	}
	if err := cache.Add(first); err != nil { // the first write's event; the second sends none
		t.Fatal(err)
	}
	if cache.Behind(key) {
		t.Error("the cache is Behind at the version both writes stored: the ReplicaSet controller would skip its syncs for ever")
	}
	if behind, err := tr.Behind(context.Background(), d); err != nil || behind {
		t.Errorf("after the first write's event the tracker says behind %v (%v): the Deployment controller would wait for ever", behind, err)
	}
}
