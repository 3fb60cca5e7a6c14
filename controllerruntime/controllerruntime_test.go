package controllerruntime

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ctrlkit/ctrlkit/internal/writes"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

var yes = true

func ownedBy(kind, name, uid string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}}
}

func fakeClient(objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().
		WithIndex(&corev1.Pod{}, ControllerUIDField, controllerUID).
		WithIndex(&corev1.Pod{}, OrphanField, orphan).
		WithIndex(&appsv1.ReplicaSet{}, ControllerUIDField, controllerUID).
		WithIndex(&appsv1.ReplicaSet{}, OrphanField, orphan).
		WithStatusSubresource(&appsv1.ReplicaSet{}, &appsv1.Deployment{}).
		WithObjects(objs...).Build()
}

func TestReaders(t *testing.T) {
	ctx := context.Background()
	c := fakeClient(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "owned", Labels: map[string]string{"app": "web"}, OwnerReferences: ownedBy("ReplicaSet", "web", "rs-uid")}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orphan", Labels: map[string]string{"app": "web"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "orphan", Labels: map[string]string{"app": "db"}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}},
	)
	pods := podReader(c)
	podNames := func(pods []*corev1.Pod, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"ListByController(rs-uid)", podNames(pods.ListByController(ctx, "a", "rs-uid")), []string{"a/owned"}},
		{"ListByController(orphans of a)", podNames(pods.ListByController(ctx, "a", "")), []string{"a/orphan"}},
		{"List(a, nil)", podNames(pods.List(ctx, "a", nil)), []string{"a/orphan", "a/owned"}},
		{"List(all, app=db)", podNames(pods.List(ctx, "", labels.SelectorFromSet(labels.Set{"app": "db"}))), []string{"b/orphan"}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if d, err := deploymentReader(c).Get(ctx, types.NamespacedName{Namespace: "a", Name: "web"}); err != nil || d.Name != "web" {
		t.Errorf("Get(a/web) = %v, %v", d, err)
	}
	if _, err := replicaSetReader(c).Get(ctx, types.NamespacedName{Namespace: "a", Name: "nope"}); !apierrors.IsNotFound(err) {
		t.Errorf("Get(missing) err = %v; want NotFound", err)
	}
}

func TestWriter(t *testing.T) {
	ctx := context.Background()
	c := fakeClient()
	w := Writer{Client: c}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-1", Labels: map[string]string{"app": "web"}}}
	created, err := w.CreateReplicaSet(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	if rs.ResourceVersion != "" || created.ResourceVersion == "" {
		t.Errorf("CreateReplicaSet modified its input (rv %q) or returned no version (%q)", rs.ResourceVersion, created.ResourceVersion)
	}
	upd := created.DeepCopy()
	upd.Status.Replicas = 3
	stored, err := w.UpdateReplicaSetStatus(ctx, upd)
	if err != nil || stored.Status.Replicas != 3 {
		t.Fatalf("UpdateReplicaSetStatus = %v, %v", stored, err)
	}
	if _, err := w.UpdateReplicaSetStatus(ctx, upd); !apierrors.IsConflict(err) {
		t.Errorf("status update with a stale resourceVersion: err = %v; want Conflict", err)
	}
	key := types.NamespacedName{Namespace: "a", Name: "web-1"}
	patched, err := w.PatchReplicaSet(ctx, key, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`))
	if err != nil || patched.Labels["x"] != "y" {
		t.Fatalf("PatchReplicaSet = %v, %v", patched, err)
	}
	if live, err := w.GetReplicaSet(ctx, key); err != nil || live.Labels["x"] != "y" {
		t.Errorf("GetReplicaSet = %v, %v", live, err)
	}
	// controller-runtime's fake client ignores delete preconditions (the
	// e2e test runs against a real API server); check that one is sent.
	var do client.DeleteOptions
	do.ApplyOptions(preconditions("other-uid"))
	if do.Preconditions == nil || do.Preconditions.UID == nil || *do.Preconditions.UID != "other-uid" {
		t.Errorf("delete options = %+v; want a UID precondition", do)
	}
	if len(preconditions("")) != 0 {
		t.Error("an empty UID made a precondition")
	}
	if err := w.DeleteReplicaSet(ctx, key, patched.UID); err != nil {
		t.Errorf("DeleteReplicaSet: %v", err)
	}
	pod, err := w.CreatePod(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.PatchPod(ctx, "a", "p", []byte(`{"metadata":{"labels":{"adopted":"yes"}}}`)); err != nil {
		t.Errorf("PatchPod: %v", err)
	}
	if err := w.DeletePod(ctx, "a", "p", pod.UID); err != nil {
		t.Errorf("DeletePod: %v", err)
	}
}

// TestHandlers checks that events reach the queue as the rules ask, in
// the namespace asked for, and that the ReplicaSet rules' observations
// reach the expectations before the key is queued.
func TestHandlers(t *testing.T) {
	ctx := context.Background()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", UID: "rs-uid", ResourceVersion: "1"}}
	c := fakeClient(rs)
	rules := replicaset.EventRules{ReplicaSets: replicaSetReader(c)}
	var exp replicaset.Expectations
	key := types.NamespacedName{Namespace: "a", Name: "web"}
	exp.ExpectCreations(key, 1, time.Unix(0, 0))

	wq := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[crreconcile.Request]())
	defer wq.ShutDown()
	h := handlerFor(queue{namespace: "a"}, observed(&exp, rules.PodAdded), observed2(&exp, rules.PodUpdated), observed(&exp, rules.PodDeleted))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", UID: "p-uid", OwnerReferences: ownedBy("ReplicaSet", "web", "rs-uid")}}
	h.Create(ctx, event.TypedCreateEvent[*corev1.Pod]{Object: pod}, wq)
	if !exp.Satisfied(key, time.Unix(0, 0)) {
		t.Error("the pod's creation was not observed")
	}
	if wq.Len() != 1 {
		t.Fatalf("queue length = %d; want 1", wq.Len())
	}
	if req, _ := wq.Get(); req.NamespacedName != key {
		t.Errorf("queued %v; want %v", req, key)
	} else {
		wq.Done(req)
	}
	other := pod.DeepCopy()
	other.Namespace = "b"
	h.Delete(ctx, event.TypedDeleteEvent[*corev1.Pod]{Object: other}, wq)
	if wq.Len() != 0 {
		t.Errorf("an event of namespace b was queued for a controller restricted to a")
	}
}

func TestAdapt(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		res      reconcile.Result
		err      error
		want     crreconcile.Result
		terminal bool
	}{
		{"requeue", reconcile.Result{RequeueAfter: time.Second}, nil, crreconcile.Result{RequeueAfter: time.Second}, false},
		{"retry", reconcile.Result{}, errors.New("conflict"), crreconcile.Result{}, false},
		{"terminal", reconcile.Result{}, reconcile.Terminal(errors.New("bad selector")), crreconcile.Result{}, true},
	} {
		got, err := adapt(func(context.Context, types.NamespacedName) (reconcile.Result, error) { return tc.res, tc.err }).
			Reconcile(ctx, crreconcile.Request{})
		if got != tc.want || (err != nil) != (tc.err != nil) || errors.Is(err, crreconcile.TerminalError(nil)) != tc.terminal {
			t.Errorf("%s: adapt = %v, %v; want %v, terminal %v", tc.name, got, err, tc.want, tc.terminal)
		}
	}
}

// TestWriteMarks checks the wait for the controllers' own writes: a
// write that stores a new version marks the object until the cache holds
// another version; a write that stores nothing new does not.
func TestWriteMarks(t *testing.T) {
	ctx := context.Background()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}}
	server := fakeClient(rs)
	cache := fakeClient(rs) // a cache that lags the server until told otherwise
	marks := newWriteMarks(cache)
	w := writes.TrackReplicaSets(Writer{Client: server}, marks)
	k := markKey{key: types.NamespacedName{Namespace: "a", Name: "web"}}
	cur := &appsv1.ReplicaSet{}
	if err := server.Get(ctx, k.key, cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.Replicas = 2
	if _, err := w.UpdateReplicaSetStatus(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if !marks.Behind(ctx, k.kind, k.key) {
		t.Fatal("not behind after a status write the cache has not seen")
	}
	// The cache catches up.
	if err := server.Get(ctx, k.key, cur); err != nil {
		t.Fatal(err)
	}
	if err := cache.Delete(ctx, rs.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	fresh := cur.DeepCopy()
	fresh.ResourceVersion = ""
	if err := cache.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if marks.Behind(ctx, k.kind, k.key) {
		t.Error("still behind once the cache holds another version")
	}
	// A write whose result has the cached version marks nothing.
	if writes.Mark(marks, k.kind, k.key, "5", "5", "") {
		t.Error("a write that stored no new version was marked")
	}
}
