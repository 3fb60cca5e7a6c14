package benchmarks

// Side-by-side benchmarks of ctrlkit's informer package and client-go's
// cache.Indexer / SharedIndexInformer, fed with the same in-memory pods.
// Top-level names start with "inf" to stay clear of the workqueue file.
//
// A pod is represented by its full metadata as a *metav1.PartialObjectMetadata
// (what metadata-only informers store): this module does not require
// k8s.io/api. Everything the caches touch (namespace, name, labels, owner
// references, resource version) is there; client-go's side goes through
// listers.New, the generic code the generated PodLister is made of.

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/listers"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// Shape of the fixture: namespaces of infPodsPerNS pods, each namespace
// running infAppsPerNS apps of one ReplicaSet each.
const (
	infPodsPerNS = 1000
	infAppsPerNS = 10
	infPodsPerRS = infPodsPerNS / infAppsPerNS
)

// infPodCount is the size of the large fixtures: 100k pods, or 2k in short
// mode so that `go test -short -bench .` stays quick.
func infPodCount() int {
	if testing.Short() {
		return 2 * infPodsPerNS
	}
	return 100 * infPodsPerNS
}

// infPod is the stored object: a pod's metadata (see the file comment).
type infPod = metav1.PartialObjectMetadata

// infPodList builds n pods with realistic metadata (generated name, UID,
// resource version, three labels, an annotation, a controller owner
// reference) as a list, the form client-go's ListFunc returns.
func infPodList(n int) *metav1.PartialObjectMetadataList {
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "1000000"}}
	list.Items = make([]infPod, n)
	created := metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range list.Items {
		ns, app, idx := i/infPodsPerNS, (i%infPodsPerNS)/infPodsPerRS, i%infPodsPerRS
		appName := fmt.Sprintf("app-%d", app)
		hash := fmt.Sprintf("%08x", uint32(ns*infAppsPerNS+app)*2654435761)
		rsName := appName + "-" + hash
		list.Items[i] = infPod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace:         fmt.Sprintf("ns-%03d", ns),
				Name:              fmt.Sprintf("%s-%05x", rsName, idx),
				GenerateName:      rsName + "-",
				UID:               types.UID(fmt.Sprintf("3f2a9c4e-0000-4000-8000-%012d", i)),
				ResourceVersion:   fmt.Sprint(1000 + i),
				CreationTimestamp: created,
				Labels: map[string]string{
					"app": appName, "pod-template-hash": hash, "tier": []string{"frontend", "backend"}[app%2],
				},
				Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName,
					UID: infRSUID(ns, app), Controller: new(true), BlockOwnerDeletion: new(true),
				}},
			},
		}
	}
	return list
}

func infRSUID(ns, app int) types.UID {
	return types.UID(fmt.Sprintf("9b1d7e2a-0000-4000-8000-%06d%06d", ns, app))
}

// infLister is client-go's lister over an indexer, built as the generated
// PodLister is (listers.New), and infNamespaced its Pods(ns) view.
func infLister(ix cache.Indexer) listers.ResourceIndexer[*infPod] {
	return listers.New[*infPod](ix, schema.GroupResource{Resource: "pods"})
}

func infNamespaced(l listers.ResourceIndexer[*infPod], ns string) listers.ResourceIndexer[*infPod] {
	return listers.NewNamespaced(l, ns)
}

// infPodPtrs returns pointers to the items of list: ctrlkit's List form.
func infPodPtrs(list *metav1.PartialObjectMetadataList) []*infPod {
	pods := make([]*infPod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods
}

// infFixture is built once per process: the large fixture is big enough
// that rebuilding it per benchmark would dominate the run.
var infFixture = sync.OnceValue(func() *metav1.PartialObjectMetadataList { return infPodList(infPodCount()) })

func infControllerUIDIndex(obj any) ([]string, error) {
	if ref := metav1.GetControllerOfNoCopy(obj.(metav1.Object)); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// infClientGoIndexers are the indexes of a client-go indexer: namespace
// only (what informer factories install), or namespace and controller UID
// (what ctrlkit's cache always maintains).
func infClientGoIndexers(withUID bool) cache.Indexers {
	ix := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if withUID {
		ix[informer.IndexControllerUID] = infControllerUIDIndex
	}
	return ix
}

func infFillCtrlkit(tb testing.TB, pods []*infPod) *informer.Cache[*infPod] {
	c := informer.NewCache(informer.CacheConfig[*infPod]{})
	for _, p := range pods {
		if err := c.Add(p); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

func infFillClientGo(tb testing.TB, pods []*infPod, withUID bool) cache.Indexer {
	ix := cache.NewIndexer(cache.MetaNamespaceKeyFunc, infClientGoIndexers(withUID))
	for _, p := range pods {
		if err := ix.Add(p); err != nil {
			tb.Fatal(err)
		}
	}
	return ix
}

// BenchmarkInformerCacheAdd stores 10k pods into an empty cache per op.
// ns/object is the cost of one Add.
func BenchmarkInformerCacheAdd(b *testing.B) {
	pods := infPodPtrs(infPodList(10 * infPodsPerNS))
	perObject := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pods)), "ns/object")
	}
	for _, withUID := range []bool{false, true} {
		b.Run(infClientGoName(withUID), func(b *testing.B) {
			for b.Loop() {
				infFillClientGo(b, pods, withUID)
			}
			perObject(b)
		})
	}
	b.Run("impl=ctrlkit", func(b *testing.B) {
		for b.Loop() {
			infFillCtrlkit(b, pods)
		}
		perObject(b)
	})
}

// infClientGoName names client-go's sub-benchmark: "clientgo" has the
// namespace index only, "clientgo-uid" also the controller-uid index.
func infClientGoName(withUID bool) string {
	if withUID {
		return "impl=clientgo-uid"
	}
	return "impl=clientgo"
}

// BenchmarkInformerStoreOverhead reports the heap a cache adds on top of
// the objects it holds, in bytes per object, measured as the live-heap
// difference (after GC) before and after filling it with the fixture.
func BenchmarkInformerStoreOverhead(b *testing.B) {
	pods := infPodPtrs(infFixture())
	measure := func(b *testing.B, fill func() any) {
		var total uint64
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			store := fill()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(store)
			total += after.HeapAlloc - before.HeapAlloc
		}
		b.ReportMetric(float64(total)/float64(b.N*len(pods)), "B/object")
	}
	for _, withUID := range []bool{false, true} {
		b.Run(infClientGoName(withUID), func(b *testing.B) {
			measure(b, func() any { return infFillClientGo(b, pods, withUID) })
		})
	}
	b.Run("impl=ctrlkit", func(b *testing.B) {
		measure(b, func() any { return infFillCtrlkit(b, pods) })
	})
}

// BenchmarkInformerLookup queries a cache holding the fixture: one
// namespace of 1000 pods, the same with a label selector matching 100 of
// them, one controller's 100 pods through the controller-uid index, and a
// Get. impl=ctrlkit appends into the caller's slice (AppendList,
// AppendByIndex); impl=ctrlkit-alloc returns a new slice (List, ByIndex)
// as client-go does.
func BenchmarkInformerLookup(b *testing.B) {
	pods := infPodPtrs(infFixture())
	ck := infFillCtrlkit(b, pods)
	cg := infFillClientGo(b, pods, true)
	lister := infLister(cg)
	ns, name := pods[len(pods)/2].Namespace, pods[len(pods)/2].Name
	sel := labels.SelectorFromSet(labels.Set{"app": "app-3"})
	uid := string(metav1.GetControllerOfNoCopy(pods[len(pods)/2]).UID)
	dst := make([]*infPod, 0, infPodsPerNS)
	var sink int
	for _, bc := range []struct {
		name string
		f    func() int
	}{
		// client-go's typed lister, and the indexer's ByIndex.
		{"query=namespace/impl=clientgo", func() int { l, _ := infNamespaced(lister, ns).List(labels.Everything()); return len(l) }},
		{"query=namespace/impl=clientgo-byindex", func() int { l, _ := cg.ByIndex(cache.NamespaceIndex, ns); return len(l) }},
		{"query=selector/impl=clientgo", func() int { l, _ := infNamespaced(lister, ns).List(sel); return len(l) }},
		{"query=controller/impl=clientgo", func() int { l, _ := cg.ByIndex(informer.IndexControllerUID, uid); return len(l) }},
		{"query=get/impl=clientgo", func() int { p, _ := infNamespaced(lister, ns).Get(name); return len(p.Name) }},
		// ctrlkit into the caller's slice.
		{"query=namespace/impl=ctrlkit", func() int { dst = ck.AppendList(dst[:0], ns, nil); return len(dst) }},
		{"query=selector/impl=ctrlkit", func() int { dst = ck.AppendList(dst[:0], ns, sel); return len(dst) }},
		{"query=controller/impl=ctrlkit", func() int {
			dst, _ = ck.AppendByIndex(dst[:0], informer.IndexControllerUID, uid)
			return len(dst)
		}},
		{"query=get/impl=ctrlkit", func() int {
			p, _ := ck.Get(types.NamespacedName{Namespace: ns, Name: name})
			return len(p.Name)
		}},
		// ctrlkit allocating its result, as client-go does.
		{"query=namespace/impl=ctrlkit-alloc", func() int { l, _ := ck.List(ns, nil); return len(l) }},
		{"query=selector/impl=ctrlkit-alloc", func() int { l, _ := ck.List(ns, sel); return len(l) }},
		{"query=controller/impl=ctrlkit-alloc", func() int { l, _ := ck.ByIndex(informer.IndexControllerUID, uid); return len(l) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				sink += bc.f()
			}
		})
	}
	runtime.KeepAlive(sink)
}

// infCountingHandler counts adds and closes done when it has seen want.
type infCountingHandler struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (h *infCountingHandler) add() {
	if h.n.Add(1) == h.want {
		close(h.done)
	}
}

// infSyncCtrlkit runs a ctrlkit informer over pods until a handler has
// seen every pod, then stops it. It returns the time to that point.
func infSyncCtrlkit(b testing.TB, pods []*infPod) time.Duration {
	start := time.Now()
	lw := informer.ListWatchFuncs[*infPod]{
		ListFunc: func(context.Context) ([]*infPod, string, error) { return pods, "1000000", nil },
		WatchFunc: func(context.Context, string) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	inf := informer.New[*infPod](lw, informer.Config[*infPod]{})
	h := &infCountingHandler{want: int64(len(pods)), done: make(chan struct{})}
	if _, err := inf.AddHandler(informer.Handler[*infPod]{OnAdd: func(*infPod) { h.add() }}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- inf.Run(ctx) }()
	<-h.done
	took := time.Since(start)
	infPauseTimer(b)
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	if got := inf.Cache().Len(); got != len(pods) {
		b.Fatalf("ctrlkit cache holds %d pods; want %d", got, len(pods))
	}
	infResumeTimer(b)
	return took
}

// infPauseTimer and infResumeTimer exclude shutdown from the timing when
// tb is a benchmark.
func infPauseTimer(tb testing.TB) {
	if b, ok := tb.(*testing.B); ok {
		b.StopTimer()
	}
}

func infResumeTimer(tb testing.TB) {
	if b, ok := tb.(*testing.B); ok {
		b.StartTimer()
	}
}

// infUnsupportedWatchList tells client-go's reflector that the source
// cannot stream its initial list as watch events, so it lists.
type infUnsupportedWatchList struct{}

func (infUnsupportedWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// infSyncClientGo does the same as infSyncCtrlkit with client-go's
// SharedIndexInformer (namespace index, as informer factories set up).
func infSyncClientGo(b testing.TB, list *metav1.PartialObjectMetadataList) time.Duration {
	start := time.Now()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (kruntime.Object, error) { return list, nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, infUnsupportedWatchList{}),
		&infPod{}, 0, infClientGoIndexers(false))
	h := &infCountingHandler{want: int64(len(list.Items)), done: make(chan struct{})}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { h.add() }}); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	ran := make(chan struct{})
	go func() { inf.Run(stop); close(ran) }()
	<-h.done
	took := time.Since(start)
	infPauseTimer(b)
	close(stop)
	<-ran
	if got := len(inf.GetStore().ListKeys()); got != len(list.Items) {
		b.Fatalf("client-go cache holds %d pods; want %d", got, len(list.Items))
	}
	infResumeTimer(b)
	return took
}

// BenchmarkInformerFirstSync measures an informer's start over the
// fixture: list, fill the cache, and deliver every pod to one handler.
// Both read the same pods; client-go's reflector shallow-copies each item
// out of the list (meta.ExtractListWithAlloc), ctrlkit stores the pointers
// its ListWatcher returns.
func BenchmarkInformerFirstSync(b *testing.B) {
	list := infFixture()
	pods := infPodPtrs(list)
	b.Run("impl=clientgo", func(b *testing.B) {
		for b.Loop() {
			infSyncClientGo(b, list)
		}
	})
	b.Run("impl=ctrlkit", func(b *testing.B) {
		for b.Loop() {
			infSyncCtrlkit(b, pods)
		}
	})
}

// BenchmarkInformerPaired runs the two implementations alternately, one
// op each in turn, and reports their mean times and the ratio
// ctrlkit/client-go. On a shared machine whose load drifts, this ratio is
// steadier than one taken from two separate benchmarks.
func BenchmarkInformerPaired(b *testing.B) {
	list := infFixture()
	pods := infPodPtrs(list)
	small := pods[:10*infPodsPerNS]
	ck := infFillCtrlkit(b, pods)
	cg := infLister(infFillClientGo(b, pods, false))
	ns := pods[len(pods)/2].Namespace
	sel := labels.SelectorFromSet(labels.Set{"app": "app-3"})
	dst := make([]*infPod, 0, infPodsPerNS)
	timed := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	// Lookups are repeated to make each timed op long enough to measure.
	const reps = 20
	for _, pc := range []struct {
		name   string
		ck, cg func() time.Duration
	}{
		{"op=add10k", func() time.Duration { return timed(func() { infFillCtrlkit(b, small) }) },
			func() time.Duration { return timed(func() { infFillClientGo(b, small, false) }) }},
		{"op=namespace", func() time.Duration {
			return timed(func() {
				for range reps {
					dst = ck.AppendList(dst[:0], ns, nil)
				}
			})
		}, func() time.Duration {
			return timed(func() {
				for range reps {
					_, _ = infNamespaced(cg, ns).List(labels.Everything())
				}
			})
		}},
		{"op=selector", func() time.Duration {
			return timed(func() {
				for range reps {
					dst = ck.AppendList(dst[:0], ns, sel)
				}
			})
		}, func() time.Duration {
			return timed(func() {
				for range reps {
					_, _ = infNamespaced(cg, ns).List(sel)
				}
			})
		}},
		{"op=firstsync", func() time.Duration { return infSyncCtrlkit(b, pods) },
			func() time.Duration { return infSyncClientGo(b, list) }},
	} {
		b.Run(pc.name, func(b *testing.B) {
			var tck, tcg time.Duration
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					tck += pc.ck()
					tcg += pc.cg()
				} else {
					tcg += pc.cg()
					tck += pc.ck()
				}
			}
			b.ReportMetric(float64(tck.Nanoseconds())/float64(b.N), "ctrlkit-ns/op")
			b.ReportMetric(float64(tcg.Nanoseconds())/float64(b.N), "clientgo-ns/op")
			b.ReportMetric(float64(tck)/float64(tcg), "ratio")
		})
	}
}

// TestInformerBenchmarksAgree checks that the fixtures mean the same thing
// to both implementations, so the benchmarks compare equal work.
func TestInformerBenchmarksAgree(t *testing.T) {
	list := infPodList(3 * infPodsPerNS)
	pods := infPodPtrs(list)
	ck := infFillCtrlkit(t, pods)
	cg := infFillClientGo(t, pods, true)
	lister := infLister(cg)
	names := func(ps []*infPod) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.Namespace + "/" + p.Name
		}
		slices.Sort(out)
		return out
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "app-3"})
	for _, ns := range []string{"", "ns-001"} {
		for _, s := range []labels.Selector{labels.Everything(), sel} {
			got, _ := ck.List(ns, s)
			want, _ := infNamespaced(lister, ns).List(s)
			if !slices.Equal(names(got), names(want)) || len(got) == 0 {
				t.Errorf("List(%q, %v): ctrlkit %d pods, client-go %d pods, or they differ", ns, s, len(got), len(want))
			}
		}
	}
	uid := string(infRSUID(1, 3))
	got, _ := ck.ByIndex(informer.IndexControllerUID, uid)
	wantObjs, _ := cg.ByIndex(informer.IndexControllerUID, uid)
	if len(got) != infPodsPerRS || len(wantObjs) != infPodsPerRS {
		t.Errorf("ByIndex(controller-uid): ctrlkit %d, client-go %d; want %d", len(got), len(wantObjs), infPodsPerRS)
	}

	// Both informers sync the whole list (each helper fails otherwise).
	small := infPodList(infPodsPerNS)
	infSyncCtrlkit(t, infPodPtrs(small))
	infSyncClientGo(t, small)
}
