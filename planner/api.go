package planner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// api adapts a memcluster.Cluster to the read and write interfaces of the
// deployment and replicaset reconcilers. Every read is live (there is no
// informer cache), so the reconcilers always see the latest writes: this
// is what makes the planner's loop deterministic and lets it treat
// ReplicaSet expectations as always satisfied.
type api struct {
	c  *memcluster.Cluster
	ns string

	// podWrites counts pod writes (and ReplicaSet deletions, which
	// collect pods), so the planner knows when the kubelet must look again.
	podWrites atomic.Int64

	// admit, if set, decides each pod creation first (admission: limit
	// ranges and quotas); it may modify the pod.
	admit     func(ctx context.Context, pod *corev1.Pod) error
	admitting sync.Mutex // one admission and creation at a time

	mu       sync.Mutex
	events   []string // recorded against the Deployment since the last step
	warnings []string // ReplicaSet warnings since the last step
	// refused is each ReplicaSet's last warning about a refused pod: the
	// same refusal, retried until a creation succeeds, is shown once.
	refused map[string]string
}

// refusal is a pod creation admission refused: the simulation goes on,
// and the ReplicaSet controller tries again later.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

var (
	_ deployment.Client                    = (*api)(nil)
	_ deployment.EventRecorder             = (*api)(nil)
	_ replicaset.Client                    = (*api)(nil)
	_ reconcile.Getter[*appsv1.Deployment] = deploymentGetter{}
	_ reconcile.Reader[*appsv1.ReplicaSet] = rsReader{}
	_ reconcile.Lister[*corev1.Pod]        = podLister{}
	_ reconcile.ByController[*corev1.Pod]  = podLister{}
)

// Get reads a Deployment.
func (a *api) Get(key types.NamespacedName) (*appsv1.Deployment, error) {
	return a.c.Deployments(key.Namespace).Get(context.Background(), key.Name, metav1.GetOptions{})
}

// deploymentGetter reads Deployments for the deployment Reconciler.
type deploymentGetter struct{ a *api }

func (g deploymentGetter) Get(_ context.Context, key types.NamespacedName) (*appsv1.Deployment, error) {
	return g.a.Get(key)
}

// rsReader reads ReplicaSets for both reconcilers.
type rsReader struct{ a *api }

func (r rsReader) Get(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return r.a.c.ReplicaSets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
}

func (r rsReader) List(_ context.Context, namespace string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	return r.a.List(namespace, sel)
}

// List lists ReplicaSets.
func (a *api) List(namespace string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	items, _, err := a.c.ReplicaSets(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: sel.String()})
	return items, err
}

// podLister lists pods for the replicaset Reconciler.
type podLister struct{ a *api }

func (p podLister) List(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.Pod, error) {
	items, _, err := p.a.c.Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	return items, err
}

// ListByController returns the pods of the planner's namespace whose
// controller has the UID uid (the deployment Reconciler asks only by UID).
func (p podLister) ListByController(ctx context.Context, _ string, uid types.UID) ([]*corev1.Pod, error) {
	pods, _, err := p.a.c.Pods(p.a.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return controlledBy(uid, pods), nil
}

func (a *api) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.c.ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
}

func (a *api) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.c.ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
}

func (a *api) DeleteReplicaSet(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	a.podWrites.Add(1)
	return a.c.ReplicaSets(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (a *api) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	return a.c.ReplicaSets(key.Namespace).Patch(ctx, key.Name, pt, data, metav1.PatchOptions{})
}

func (a *api) GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return a.c.ReplicaSets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
}

func (a *api) UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.c.ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}

func (a *api) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return a.c.Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
}

func (a *api) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return a.c.Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
}

func (a *api) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	if a.admit != nil {
		// The ReplicaSet controller creates a batch of pods at once:
		// admission and creation are one step, as kube-apiserver's quota
		// evaluator serialises the charges, or a batch would overshoot.
		a.admitting.Lock()
		defer a.admitting.Unlock()
		if err := a.admit(ctx, pod); err != nil {
			return nil, &refusal{err}
		}
	}
	a.podWrites.Add(1)
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		a.mu.Lock()
		delete(a.refused, ref.Name)
		a.mu.Unlock()
	}
	return a.c.Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

func (a *api) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	a.podWrites.Add(1)
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	return a.c.Pods(namespace).Delete(ctx, name, opts)
}

func (a *api) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return a.c.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a *api) PatchPod(ctx context.Context, namespace, name string, patch []byte) error {
	a.podWrites.Add(1)
	_, err := a.c.Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// Event records a Deployment event (deployment.EventRecorder). The
// ReplicaSet controller's pod events are not kept: they are one per pod.
func (a *api) Event(obj runtime.Object, eventType, reason, message string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, fmt.Sprintf("%s %s: %s", eventType, reason, message))
}

// rsEvents keeps the ReplicaSet controller's warnings (FailedCreate and
// the like), which may arrive from several goroutines of one WritePods.
type rsEvents struct{ a *api }

func (r rsEvents) Event(obj runtime.Object, eventType, reason, message string) {
	if eventType != corev1.EventTypeWarning {
		return
	}
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	w := fmt.Sprintf("%s %s: %s", eventType, reason, message)
	if rs, ok := obj.(*appsv1.ReplicaSet); ok && reason == replicaset.ReasonFailedCreate {
		if r.a.refused[rs.Name] == w {
			return
		}
		if r.a.refused == nil {
			r.a.refused = map[string]string{}
		}
		r.a.refused[rs.Name] = w
	}
	r.a.warnings = append(r.a.warnings, w)
}

// takeEvents returns and clears the recorded events: the Deployment's in
// order, then the ReplicaSet warnings sorted, so that the timeline does
// not depend on goroutine scheduling.
func (a *api) takeEvents() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	sort.Strings(a.warnings)
	ev := append(a.events, slices.Compact(a.warnings)...) // a refusal retried in every round of an instant
	a.events, a.warnings = nil, nil
	return ev
}
