package replicaset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

var (
	podsGR = schema.GroupResource{Resource: "pods"}
	rssGR  = schema.GroupResource{Group: "apps", Resource: "replicasets"}
)

// world is a tiny in-memory API server: every write bumps a global
// resourceVersion, stale writes get a Conflict, and stored objects are
// never modified in place (readers may keep the pointers they got). Reads
// through Get/List are the "cache"; GetReplicaSet is the live read. Fault
// hooks inject errors; observers see every change, like a watch.
type world struct {
	mu    sync.Mutex
	clock *clock.Fake
	rv    int
	seq   int
	rss   map[types.NamespacedName]*appsv1.ReplicaSet
	pods  map[types.NamespacedName]*corev1.Pod

	// Fault injection, each called with the 1-based number of the call.
	createErr func(n int) error
	statusErr func(n int) error
	deleteErr func(pod *corev1.Pod) error
	// lostDelete, if it returns an error, makes a deletion that happened
	// report that error (a response lost on the way back).
	lostDelete func(pod *corev1.Pod) error
	// getPodErr, if set, fails live pod reads.
	getPodErr error
	creates   int
	statuses  int

	// graceful makes deletions set a deletion timestamp instead of removing
	// the pod; reap removes such pods.
	graceful bool

	// observers are called after every pod change, with the lock held:
	// they must not call back into the world.
	observers []func(old, cur *corev1.Pod)

	// log and watchers implement List/Watch for informers.
	log      []logEntry
	watchers []worldWatch

	events []string
}

func newWorld(now time.Time) *world {
	return &world{
		clock: clock.NewFake(now),
		rss:   map[types.NamespacedName]*appsv1.ReplicaSet{},
		pods:  map[types.NamespacedName]*corev1.Pod{},
	}
}

func keyOf(m metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
}

func (w *world) nextRV() string { w.rv++; return strconv.Itoa(w.rv) }

// addRS stores rs (a copy) and returns the stored object.
func (w *world) addRS(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	w.mu.Lock()
	defer w.mu.Unlock()
	rs = rs.DeepCopy()
	rs.ResourceVersion = w.nextRV()
	typ := watch.Added
	if _, ok := w.rss[keyOf(rs)]; ok {
		typ = watch.Modified
	}
	w.rss[keyOf(rs)] = rs
	w.emitLocked(typ, rs)
	return rs
}

// deleteRS removes a ReplicaSet.
func (w *world) deleteRS(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.rss[key]; ok {
		delete(w.rss, key)
		w.nextRV()
		w.emitLocked(watch.Deleted, old)
	}
}

// updatePod applies mod to a copy of the stored pod, as a kubelet would.
func (w *world) updatePod(key types.NamespacedName, mod func(*corev1.Pod)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old, ok := w.pods[key]
	if !ok {
		return
	}
	cur := old.DeepCopy()
	mod(cur)
	cur.ResourceVersion = w.nextRV()
	w.pods[key] = cur
	w.podChangedLocked(old, cur)
}

// addPod stores pod (a copy).
func (w *world) addPod(pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pod = pod.DeepCopy()
	pod.ResourceVersion = w.nextRV()
	old := w.pods[keyOf(pod)]
	w.pods[keyOf(pod)] = pod
	w.podChangedLocked(old, pod)
}

// podChangedLocked reports a pod change to observers and watchers.
func (w *world) podChangedLocked(old, cur *corev1.Pod) {
	for _, o := range w.observers {
		o(old, cur)
	}
	switch {
	case old == nil:
		w.emitLocked(watch.Added, cur)
	case cur == nil:
		w.emitLocked(watch.Deleted, old)
	default:
		w.emitLocked(watch.Modified, cur)
	}
}

// snapshot returns the stored pods sorted by name.
func (w *world) snapshot() []*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(w.pods))
	for _, p := range w.pods {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return cmpStr(a.Name, b.Name) })
	return out
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (w *world) rs(key types.NamespacedName) *appsv1.ReplicaSet {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rss[key]
}

// rsReader is the ReplicaSet "cache".
type rsReader struct{ w *world }

func (r rsReader) Get(_ context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if rs, ok := r.w.rss[key]; ok {
		return rs, nil
	}
	return nil, apierrors.NewNotFound(rssGR, key.Name)
}

func (r rsReader) List(_ context.Context, ns string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	var out []*appsv1.ReplicaSet
	for _, rs := range r.w.rss {
		if rs.Namespace == ns && sel.Matches(labels.Set(rs.Labels)) {
			out = append(out, rs)
		}
	}
	return out, nil
}

// listPods is the pod "cache", in name order so tests are deterministic.
func (w *world) listPods(_ context.Context, ns string, sel labels.Selector) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range w.snapshot() {
		if p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (w *world) CreatePod(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	w.mu.Lock()
	w.creates++
	if w.createErr != nil {
		if err := w.createErr(w.creates); err != nil {
			w.mu.Unlock()
			return nil, err
		}
	}
	w.seq++
	pod = pod.DeepCopy()
	pod.Name = pod.GenerateName + fmt.Sprintf("p%03d", w.seq)
	pod.UID = types.UID(fmt.Sprintf("uid-%s", pod.Name))
	pod.CreationTimestamp = metav1.NewTime(w.clock.Now())
	pod.ResourceVersion = w.nextRV()
	w.pods[keyOf(pod)] = pod
	w.podChangedLocked(nil, pod)
	w.mu.Unlock()
	return pod, nil
}

func (w *world) DeletePod(_ context.Context, ns, name string, uid types.UID) error {
	w.mu.Lock()
	key := types.NamespacedName{Namespace: ns, Name: name}
	old, ok := w.pods[key]
	if !ok {
		w.mu.Unlock()
		return apierrors.NewNotFound(podsGR, name)
	}
	if uid != "" && old.UID != uid {
		w.mu.Unlock()
		return apierrors.NewConflict(podsGR, name, fmt.Errorf("uid precondition failed"))
	}
	if w.deleteErr != nil {
		if err := w.deleteErr(old); err != nil {
			w.mu.Unlock()
			return err
		}
	}
	var cur *corev1.Pod
	if w.graceful {
		cur = old.DeepCopy()
		t := metav1.NewTime(w.clock.Now())
		cur.DeletionTimestamp = &t
		cur.ResourceVersion = w.nextRV()
		w.pods[key] = cur
	} else {
		delete(w.pods, key)
		w.nextRV()
	}
	w.podChangedLocked(old, cur)
	w.mu.Unlock()
	if w.lostDelete != nil {
		return w.lostDelete(old)
	}
	return nil
}

// GetPod is the live read of a pod.
func (w *world) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.getPodErr != nil {
		return nil, w.getPodErr
	}
	if p, ok := w.pods[types.NamespacedName{Namespace: ns, Name: name}]; ok {
		return p.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(podsGR, name)
}

// reap removes every pod with a deletion timestamp.
func (w *world) reap() {
	for _, p := range w.snapshot() {
		if p.DeletionTimestamp != nil {
			w.mu.Lock()
			if cur, ok := w.pods[keyOf(p)]; ok {
				delete(w.pods, keyOf(p))
				w.nextRV()
				w.podChangedLocked(cur, nil)
			}
			w.mu.Unlock()
		}
	}
}

// PatchPod understands the two patches of replicaset: adopt and release.
func (w *world) PatchPod(_ context.Context, ns, name string, data []byte) error {
	var patch struct {
		Metadata struct {
			UID             types.UID         `json:"uid"`
			OwnerReferences []json.RawMessage `json:"ownerReferences"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &patch); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	w.mu.Lock()
	old, ok := w.pods[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		w.mu.Unlock()
		return apierrors.NewNotFound(podsGR, name)
	}
	if patch.Metadata.UID != old.UID {
		w.mu.Unlock()
		return apierrors.NewConflict(podsGR, name, fmt.Errorf("uid precondition failed"))
	}
	cur := old.DeepCopy()
	for _, raw := range patch.Metadata.OwnerReferences {
		var del struct {
			Patch string    `json:"$patch"`
			UID   types.UID `json:"uid"`
		}
		var ref metav1.OwnerReference
		if err := json.Unmarshal(raw, &del); err == nil && del.Patch == "delete" {
			cur.OwnerReferences = slices.DeleteFunc(cur.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == del.UID })
			continue
		}
		if err := json.Unmarshal(raw, &ref); err != nil {
			w.mu.Unlock()
			return apierrors.NewBadRequest(err.Error())
		}
		if c := metav1.GetControllerOf(cur); c != nil && c.UID != ref.UID {
			w.mu.Unlock()
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, nil)
		}
		cur.OwnerReferences = append(slices.DeleteFunc(cur.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == ref.UID }), ref)
	}
	cur.ResourceVersion = w.nextRV()
	w.pods[keyOf(cur)] = cur
	w.podChangedLocked(old, cur)
	w.mu.Unlock()
	return nil
}

func (w *world) UpdateReplicaSetStatus(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.statuses++
	if w.statusErr != nil {
		if err := w.statusErr(w.statuses); err != nil {
			return nil, err
		}
	}
	key := keyOf(rs)
	old, ok := w.rss[key]
	if !ok {
		return nil, apierrors.NewNotFound(rssGR, rs.Name)
	}
	if rs.ResourceVersion != old.ResourceVersion {
		return nil, apierrors.NewConflict(rssGR, rs.Name, fmt.Errorf("stale resourceVersion %s, have %s", rs.ResourceVersion, old.ResourceVersion))
	}
	cur := old.DeepCopy()
	cur.Status = *rs.Status.DeepCopy()
	cur.ResourceVersion = w.nextRV()
	w.rss[key] = cur
	w.emitLocked(watch.Modified, cur)
	return cur.DeepCopy(), nil
}

func (w *world) GetReplicaSet(_ context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rs, ok := w.rss[key]; ok {
		return rs.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(rssGR, key.Name)
}

// Event records events as "Type Reason Message".
func (w *world) Event(_ runtime.Object, typ, reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, typ+" "+reason+" "+msg)
}

func (w *world) takeEvents() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := w.events
	w.events = nil
	return ev
}

var (
	_ replicaset.Client                    = (*world)(nil)
	_ reconcile.Reader[*appsv1.ReplicaSet] = rsReader{}
	_ replicaset.EventRecorder             = (*world)(nil)
)

// podLister returns the world's pod "cache" as a reconcile.Lister.
func (w *world) podLister() reconcile.Lister[*corev1.Pod] {
	return reconcile.ListerFunc[*corev1.Pod](w.listPods)
}
