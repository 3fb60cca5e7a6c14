package kube

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/google/go-cmp/cmp"

	"github.com/ctrlkit/ctrlkit/informer"
)

func rs(ns, name string, lbl map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl, UID: types.UID(name + "-uid")}}
}

func TestDeploymentClient(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	c := DeploymentClient{Clientset: cs, Grace: time.Second}
	created, err := c.CreateReplicaSet(ctx, rs("ns", "web-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	created.Spec.Replicas = new(int32(3))
	if _, err := c.UpdateReplicaSet(ctx, created); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "web-1"}
	got, err := c.GetReplicaSet(ctx, key)
	if err != nil || *got.Spec.Replicas != 3 {
		t.Fatalf("GetReplicaSet = %v, %v; want 3 replicas", got, err)
	}
	if _, err := c.PatchReplicaSet(ctx, key, types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`)); err != nil {
		t.Fatal(err)
	}
	d, err := LiveDeployments(cs, 0).Get(ctx, types.NamespacedName{Namespace: "ns", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	d.Status.Replicas = 2
	if _, err := c.UpdateDeploymentStatus(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteReplicaSet(ctx, key, created.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetReplicaSet(ctx, key); !apierrors.IsNotFound(err) {
		t.Errorf("GetReplicaSet after delete: err = %v; want NotFound", err)
	}
}

func TestReplicaSetClient(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset(rs("ns", "web-1", nil))
	c := ReplicaSetClient{Clientset: cs}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := c.PatchPod(ctx, "ns", "p", []byte(`{"metadata":{"labels":{"a":"b"}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.DeletePod(ctx, "ns", "p", ""); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetReplicaSet(ctx, types.NamespacedName{Namespace: "ns", Name: "web-1"})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Replicas = 1
	if _, err := c.UpdateReplicaSetStatus(ctx, got); err != nil {
		t.Fatal(err)
	}
}

func TestGracefulOutlivesCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g, stop := graceful(ctx, time.Minute)
	defer stop()
	if g.Err() != nil {
		t.Errorf("graceful context is done (%v) right after its parent was cancelled", g.Err())
	}
	same, stop2 := graceful(ctx, 0)
	defer stop2()
	if same != ctx {
		t.Error("graceful with no grace did not return ctx itself")
	}
}

func TestInformerReader(t *testing.T) {
	ctrl := true
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{UID: "rs-uid", Controller: &ctrl, Name: "web-1", Kind: "ReplicaSet"}}}}
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p2", Labels: map[string]string{"app": "web"}}}
	elsewhere := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "p3", Labels: map[string]string{"app": "db"}}}
	cs := fake.NewClientset()
	f := informers.NewSharedInformerFactory(cs, 0)
	podInf := f.Core().V1().Pods().Informer()
	pods, err := FromInformer[*corev1.Pod](podInf, corev1.Resource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FromInformer[*corev1.Pod](podInf, corev1.Resource("pods")); err != nil {
		t.Fatalf("second FromInformer (indexes present): %v", err)
	}
	for _, o := range []runtime.Object{owned, orphan, elsewhere} {
		if err := podInf.GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	dInf := f.Apps().V1().Deployments().Informer()
	deployments, err := FromInformer[*appsv1.Deployment](dInf, appsv1.Resource("deployments"))
	if err != nil {
		t.Fatal(err)
	}
	if err := dInf.GetIndexer().Add(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	names := func(ps []*corev1.Pod, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
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
		{"ListByController(rs-uid)", names(pods.ListByController(ctx, "ns", "rs-uid")), []string{"ns/p1"}},
		{"ListByController(orphans of ns)", names(pods.ListByController(ctx, "ns", "")), []string{"ns/p2"}},
		{"List(ns, nil)", names(pods.List(ctx, "ns", nil)), []string{"ns/p1", "ns/p2"}},
		{"List(all, app=db)", names(pods.List(ctx, "", labels.SelectorFromSet(labels.Set{"app": "db"}))), []string{"other/p3"}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if p, err := pods.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "p1"}); err != nil || p.Name != "p1" {
		t.Errorf("Get(ns/p1) = %v, %v", p, err)
	}
	if _, err := deployments.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "nope"}); !apierrors.IsNotFound(err) {
		t.Errorf("Get(missing Deployment): err = %v; want NotFound", err)
	}
	if _, err := FromInformer[*corev1.Pod](nil, corev1.Resource("pods")); err == nil {
		t.Error("FromInformer(nil) succeeded; want an error")
	}
}

// TestListWatchers feeds ctrlkit's informer from the typed adapter and from
// a client-go cache.ListWatch, and checks both see a list and a watch event.
func TestListWatchers(t *testing.T) {
	for _, name := range []string{"typed", "cache.ListWatch"} {
		t.Run(name, func(t *testing.T) { testListWatcher(t, name) })
	}
}

func testListWatcher(t *testing.T, name string) {
	cs := fake.NewClientset(rs("ns", "a", nil))
	lw := map[string]informer.ListWatcher[*appsv1.ReplicaSet]{
		"typed": ReplicaSets(cs, "ns"),
		"cache.ListWatch": FromListerWatcher[*appsv1.ReplicaSet](&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return cs.AppsV1().ReplicaSets("ns").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.AppsV1().ReplicaSets("ns").Watch(ctx, o)
			},
		}),
	}[name]
	items, _, err := lw.List(t.Context())
	if err != nil || len(items) != 1 || items[0].Name != "a" {
		t.Fatalf("List = %v, %v; want [a]", items, err)
	}
	w, err := lw.Watch(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cs.AppsV1().ReplicaSets("ns").Create(t.Context(), rs("ns", name, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-w.ResultChan():
			if got, ok := ev.Object.(*appsv1.ReplicaSet); ev.Type == watch.Added && ok && got.Name == name {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no watch event")
		}
	}
}

func TestEventsRecordsRealEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs := fake.NewClientset()
	ev := StartEvents(ctx, cs)
	defer ev.Shutdown()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-uid"}}
	ev.Deployment().Event(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set web-1 from 0 to 3")
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := cs.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) == 1 {
			e := l.Items[0]
			if e.Source.Component != DeploymentComponent || e.Reason != "ScalingReplicaSet" || e.InvolvedObject.Kind != "Deployment" ||
				e.Message != "Scaled up replica set web-1 from 0 to 3" {
				t.Errorf("event = %+v", e)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events after 10s; want 1", len(l.Items))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewInformerControllersErrors(t *testing.T) {
	cs := fake.NewClientset()
	f := informers.NewSharedInformerFactory(cs, 0)
	if _, err := NewInformerControllers(nil, cs, InformerOptions{}); err == nil {
		t.Error("nil factory: no error")
	}
	if _, err := NewInformerControllers(f, nil, InformerOptions{}); err == nil {
		t.Error("nil clientset: no error")
	}
	if _, err := NewInformerControllers(f, cs, InformerOptions{Workers: -1}); err == nil {
		t.Error("negative workers: no error")
	}
	c, err := NewInformerControllers(f, cs, InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Errorf("Run on a cancelled context = %v; want nil", err)
	}
	if err := c.Run(ctx); err == nil {
		t.Error("second Run: no error")
	}
}

// Shutdown waits for the event write in flight and lets none start after
// it: a leader releases its lease only after Shutdown, and must not write
// once a successor may lead.
func TestEventsShutdownWaitsForWriteInFlight(t *testing.T) {
	cs := fake.NewClientset()
	var mu sync.Mutex
	var order []string
	started, release := make(chan struct{}), make(chan struct{})
	first := true
	cs.PrependReactor("create", "events", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		isFirst := first
		first = false
		mu.Unlock()
		if isFirst {
			close(started)
			<-release
		}
		mu.Lock()
		order = append(order, "write "+action.(k8stesting.CreateAction).GetObject().(*corev1.Event).Reason)
		mu.Unlock()
		return false, nil, nil
	})
	ev := StartEvents(t.Context(), cs)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-uid"}}
	ev.Deployment().Event(d, corev1.EventTypeNormal, "First", "first")
	<-started
	ev.Deployment().Event(d, corev1.EventTypeNormal, "Second", "queued behind the first")
	done := make(chan struct{})
	go func() {
		ev.Shutdown()
		mu.Lock()
		order = append(order, "shutdown")
		mu.Unlock()
		close(done)
	}()
	close(release)
	<-done
	mu.Lock()
	got := slices.Clone(order)
	mu.Unlock()
	if len(got) < 2 || got[0] != "write First" || got[len(got)-1] != "shutdown" {
		t.Errorf("order = %v; want the first write, perhaps the second, then shutdown", got)
	}
	// Whatever the broadcaster still hands out is refused, not written.
	if _, err := ev.sink.Create(&corev1.Event{}); err == nil {
		t.Error("Create after Shutdown: no error")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != len(got) {
		t.Errorf("a write after Shutdown: %v", order)
	}
}
