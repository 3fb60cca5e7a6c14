package deployment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// t0 is the fixed start of every test world.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	rsResource  = schema.GroupResource{Group: "apps", Resource: "replicasets"}
	depResource = schema.GroupResource{Group: "apps", Resource: "deployments"}
)

// world is an in-memory API server holding Deployments, ReplicaSets and
// (simulated) pods, in the manner of httptest.ResponseRecorder: it
// implements deployment.Client and the read interfaces, checks
// resourceVersions (a stale write is a Conflict), bumps generations on
// spec changes, and records what happened. fail, if set, can inject an
// error before any write.
type world struct {
	mu          sync.Mutex
	now         time.Time
	rv          int
	uid         int
	deployments map[types.NamespacedName]*appsv1.Deployment
	rss         map[types.NamespacedName]*appsv1.ReplicaSet
	// terminating counts, per ReplicaSet UID, pods that are shutting down
	// after a scale-down; they linger for one settle.
	terminating map[types.UID]int32
	// unhealthy ReplicaSets (by template image) never get available pods.
	unhealthyImage string
	fail           func(verb string, key types.NamespacedName) error
	writes         []string
	events         []string
}

var (
	_ deployment.Client        = (*world)(nil)
	_ deployment.EventRecorder = (*world)(nil)
)

// config returns a ReconcilerConfig that reads and writes w.
func (w *world) config() deployment.ReconcilerConfig {
	return deployment.ReconcilerConfig{
		Deployments: reconcile.GetterFunc[*appsv1.Deployment](func(_ context.Context, k types.NamespacedName) (*appsv1.Deployment, error) {
			return w.Get(k)
		}),
		ReplicaSets: reconcile.ListerFunc[*appsv1.ReplicaSet](func(_ context.Context, ns string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
			return w.List(ns, sel)
		}),
		Pods: reconcile.ByControllerFunc[*corev1.Pod](func(_ context.Context, _ string, uid types.UID) ([]*corev1.Pod, error) {
			return w.ByIndex(informer.IndexControllerUID, string(uid))
		}),
		Client: w, Events: w, Clock: clock.NewFake(t0),
	}
}

// reconciler returns a Reconciler for cfg.
func newReconcilerFor(t testing.TB, cfg deployment.ReconcilerConfig) *deployment.Reconciler {
	t.Helper()
	r, err := deployment.NewReconciler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newWorld() *world {
	return &world{now: t0, deployments: map[types.NamespacedName]*appsv1.Deployment{},
		rss: map[types.NamespacedName]*appsv1.ReplicaSet{}, terminating: map[types.UID]int32{}}
}

func (w *world) nextRV() string { w.rv++; return strconv.Itoa(w.rv) }
func (w *world) nextUID(prefix string) types.UID {
	w.uid++
	return types.UID(fmt.Sprintf("%s-uid-%d", prefix, w.uid))
}

func (w *world) check(verb string, key types.NamespacedName) error {
	if w.fail != nil {
		if err := w.fail(verb, key); err != nil {
			return err
		}
	}
	w.writes = append(w.writes, verb+" "+key.Name)
	return nil
}

// addDeployment stores d as a user would create it.
func (w *world) addDeployment(d *appsv1.Deployment) *appsv1.Deployment {
	w.mu.Lock()
	defer w.mu.Unlock()
	d = d.DeepCopy()
	d.UID = w.nextUID("d")
	d.ResourceVersion = w.nextRV()
	d.CreationTimestamp = metav1.NewTime(w.now)
	if d.Generation == 0 {
		d.Generation = 1
	}
	w.deployments[deployment.KeyOf(d)] = d
	return d.DeepCopy()
}

// addReplicaSet stores rs as created by someone else.
func (w *world) addReplicaSet(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	w.mu.Lock()
	defer w.mu.Unlock()
	rs = rs.DeepCopy()
	if rs.UID == "" {
		rs.UID = w.nextUID("rs")
	}
	rs.ResourceVersion = w.nextRV()
	if rs.CreationTimestamp.IsZero() {
		rs.CreationTimestamp = metav1.NewTime(w.now)
	}
	rs.Generation = 1
	w.rss[types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}] = rs
	return rs.DeepCopy()
}

// edit applies a user edit to a Deployment, bumping its generation if the
// spec changed.
func (w *world) edit(key types.NamespacedName, f func(d *appsv1.Deployment)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.deployments[key].DeepCopy()
	f(d)
	if !apiequality.Semantic.DeepEqual(d.Spec, w.deployments[key].Spec) {
		d.Generation++
	}
	d.ResourceVersion = w.nextRV()
	w.deployments[key] = d
}

// replicaSets returns copies of the stored ReplicaSets, sorted by name.
func (w *world) replicaSets() []*appsv1.ReplicaSet {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*appsv1.ReplicaSet, 0, len(w.rss))
	for _, rs := range w.rss {
		out = append(out, rs.DeepCopy())
	}
	slices.SortFunc(out, func(a, b *appsv1.ReplicaSet) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Get reads a Deployment (see config).
func (w *world) Get(key types.NamespacedName) (*appsv1.Deployment, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.deployments[key]
	if !ok {
		return nil, apierrors.NewNotFound(depResource, key.Name)
	}
	return d.DeepCopy(), nil
}

// List lists ReplicaSets, sorted by name (see config).
func (w *world) List(namespace string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*appsv1.ReplicaSet
	for _, rs := range w.rss {
		if rs.Namespace == namespace && sel.Matches(labels.Set(rs.Labels)) {
			out = append(out, rs.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b *appsv1.ReplicaSet) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ByIndex returns, for informer.IndexControllerUID, the simulated pods of
// the ReplicaSet with UID value: status.replicas Running pods plus the
// ones still terminating.
func (w *world) ByIndex(index, value string) ([]*corev1.Pod, error) {
	if index != informer.IndexControllerUID {
		return nil, fmt.Errorf("unknown index %q", index)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rs := range w.rss {
		if string(rs.UID) == value {
			return podsOf(rs, w.terminating[rs.UID], w.now), nil
		}
	}
	return nil, nil
}

func podsOf(rs *appsv1.ReplicaSet, terminating int32, now time.Time) []*corev1.Pod {
	var out []*corev1.Pod
	n := rs.Status.Replicas + terminating
	for i := int32(0); i < n; i++ {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: fmt.Sprintf("%s-%d", rs.Name, i),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if i >= rs.Status.Replicas {
			ts := metav1.NewTime(now)
			p.DeletionTimestamp = &ts
		}
		out = append(out, p)
	}
	return out
}

// Event implements deployment.EventRecorder.
func (w *world) Event(obj runtime.Object, typ, reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, fmt.Sprintf("%s %s %s", typ, reason, msg))
}

func (w *world) CreateReplicaSet(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	if err := w.check("create", key); err != nil {
		return nil, err
	}
	if _, ok := w.rss[key]; ok {
		return nil, apierrors.NewAlreadyExists(rsResource, rs.Name)
	}
	rs = rs.DeepCopy()
	rs.UID = w.nextUID("rs")
	rs.ResourceVersion = w.nextRV()
	rs.CreationTimestamp = metav1.NewTime(w.now)
	rs.Generation = 1
	w.rss[key] = rs
	return rs.DeepCopy(), nil
}

func (w *world) UpdateReplicaSet(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	if err := w.check("update", key); err != nil {
		return nil, err
	}
	cur, ok := w.rss[key]
	if !ok {
		return nil, apierrors.NewNotFound(rsResource, rs.Name)
	}
	if cur.ResourceVersion != rs.ResourceVersion {
		return nil, apierrors.NewConflict(rsResource, rs.Name, fmt.Errorf("resourceVersion %s is stale (now %s)", rs.ResourceVersion, cur.ResourceVersion))
	}
	out := rs.DeepCopy()
	out.Status = cur.Status // the main resource ignores status
	out.UID, out.CreationTimestamp, out.Generation = cur.UID, cur.CreationTimestamp, cur.Generation
	if !apiequality.Semantic.DeepEqual(out.Spec, cur.Spec) {
		out.Generation++
	}
	out.ResourceVersion = w.nextRV()
	w.rss[key] = out
	return out.DeepCopy(), nil
}

func (w *world) DeleteReplicaSet(_ context.Context, key types.NamespacedName, uid types.UID) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("delete", key); err != nil {
		return err
	}
	cur, ok := w.rss[key]
	if !ok {
		return apierrors.NewNotFound(rsResource, key.Name)
	}
	if uid != "" && cur.UID != uid {
		return apierrors.NewConflict(rsResource, key.Name, fmt.Errorf("uid precondition failed"))
	}
	delete(w.rss, key)
	return nil
}

func (w *world) GetReplicaSet(_ context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rs, ok := w.rss[key]
	if !ok {
		return nil, apierrors.NewNotFound(rsResource, key.Name)
	}
	return rs.DeepCopy(), nil
}

// PatchReplicaSet understands the two patches the controller sends: add a
// controller reference, or delete the reference with a given UID.
func (w *world) PatchReplicaSet(_ context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("patch", key); err != nil {
		return nil, err
	}
	cur, ok := w.rss[key]
	if !ok {
		return nil, apierrors.NewNotFound(rsResource, key.Name)
	}
	var p struct {
		Metadata struct {
			UID             types.UID `json:"uid"`
			OwnerReferences []struct {
				metav1.OwnerReference
				Patch string `json:"$patch"`
			} `json:"ownerReferences"`
		} `json:"metadata"`
	}
	if pt != types.StrategicMergePatchType {
		return nil, fmt.Errorf("unexpected patch type %s", pt)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if p.Metadata.UID != cur.UID {
		return nil, apierrors.NewConflict(rsResource, key.Name, fmt.Errorf("uid precondition failed"))
	}
	out := cur.DeepCopy()
	for _, r := range p.Metadata.OwnerReferences {
		out.OwnerReferences = slices.DeleteFunc(out.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == r.UID })
		if r.Patch != "delete" {
			out.OwnerReferences = append(out.OwnerReferences, r.OwnerReference)
		}
	}
	out.ResourceVersion = w.nextRV()
	w.rss[key] = out
	return out.DeepCopy(), nil
}

// storedDeploymentLocked returns the stored Deployment d is a write to,
// after the injected errors for verb and the resourceVersion check.
func (w *world) storedDeploymentLocked(verb string, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	key := deployment.KeyOf(d)
	if err := w.check(verb, key); err != nil {
		return nil, err
	}
	cur, ok := w.deployments[key]
	if !ok {
		return nil, apierrors.NewNotFound(depResource, key.Name)
	}
	if cur.ResourceVersion != d.ResourceVersion {
		return nil, apierrors.NewConflict(depResource, key.Name, fmt.Errorf("stale resourceVersion %s", d.ResourceVersion))
	}
	return cur, nil
}

func (w *world) UpdateDeployment(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := deployment.KeyOf(d)
	cur, err := w.storedDeploymentLocked("update-deployment", d)
	if err != nil {
		return nil, err
	}
	out := d.DeepCopy()
	out.Status = cur.Status
	out.UID, out.Generation = cur.UID, cur.Generation
	if !apiequality.Semantic.DeepEqual(out.Spec, cur.Spec) {
		out.Generation++
	}
	out.ResourceVersion = w.nextRV()
	w.deployments[key] = out
	return out.DeepCopy(), nil
}

// UpdateDeploymentStatus writes status and metadata annotations, as the
// status subresource does (it resets only spec and labels).
func (w *world) UpdateDeploymentStatus(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := deployment.KeyOf(d)
	cur, err := w.storedDeploymentLocked("update-status", d)
	if err != nil {
		return nil, err
	}
	out := cur.DeepCopy()
	out.Status = *d.Status.DeepCopy()
	out.Annotations = maps(d.Annotations)
	out.ResourceVersion = w.nextRV()
	w.deployments[key] = out
	return out.DeepCopy(), nil
}

func maps(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// settle plays the ReplicaSet controller and the kubelet for one step:
// every ReplicaSet gets exactly spec.replicas pods, all ready and available
// (except ReplicaSets running the unhealthy image, whose pods never become
// ready); pods removed by a scale-down stay terminating until the next
// settle.
func (w *world) settle() {
	w.settleWith(func(rs *appsv1.ReplicaSet, spec int32) int32 {
		if w.unhealthyImage != "" && image(rs) == w.unhealthyImage {
			return 0
		}
		return spec
	})
}

// settleWith is settle with a chosen number of available pods per
// ReplicaSet (clamped to [0, spec]).
func (w *world) settleWith(available func(rs *appsv1.ReplicaSet, spec int32) int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rs := range w.rss {
		spec := ptrVal(rs.Spec.Replicas)
		w.terminating[rs.UID] = max(0, rs.Status.Replicas-spec)
		avail := min(max(available(rs, spec), 0), spec)
		term := w.terminating[rs.UID]
		rs.Status = appsv1.ReplicaSetStatus{Replicas: spec, FullyLabeledReplicas: spec, ReadyReplicas: avail, AvailableReplicas: avail,
			ObservedGeneration: rs.Generation, TerminatingReplicas: &term}
		rs.ResourceVersion = w.nextRV()
	}
}

// dropTerminating finishes the shutdown of terminating pods.
func (w *world) dropTerminating() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rs := range w.rss {
		if w.terminating[rs.UID] > 0 {
			w.terminating[rs.UID] = 0
			var zero int32
			rs.Status.TerminatingReplicas = &zero
			rs.ResourceVersion = w.nextRV()
		}
	}
}

func ptrVal(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func image(rs *appsv1.ReplicaSet) string {
	if cs := rs.Spec.Template.Spec.Containers; len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}

// newDeployment builds a Deployment "web" in namespace "ns" with app=web
// labels, the API defaults, and one container running img.
func newDeployment(replicas int32, img string) *appsv1.Deployment {
	surge, unavail := intstr.FromString("25%"), intstr.FromString("25%")
	history, deadline := int32(10), int32(600)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}},
			RevisionHistoryLimit:    &history,
			ProgressDeadlineSeconds: &deadline,
		},
	}
}
