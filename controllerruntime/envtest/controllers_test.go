package envtest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/controllerruntime/envtest"
)

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}}}
}

// builtinClients are the clients the trace names for the bench's own
// controllers and kubelet.
var builtinClients = []string{"kube-controller-manager", "deployment-controller", "replicaset-controller", "kubelet"}

// By default the Environment is envtest's cluster: kube-apiserver alone.
// What kube-controller-manager would do at once (garbage collection,
// namespace deletion, PodDisruptionBudget status) is not done, and the
// Deployment and ReplicaSet controllers and the kubelet never send a
// request.
func TestRunsNoControllersByDefault(t *testing.T) {
	env := &envtest.Environment{}
	c := start(t, env)
	ctx := t.Context()

	// The garbage collector: a Foreground deletion keeps its finalizer,
	// and the owner's dependents stay.
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "default"}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}}}}
	if err := c.Create(ctx, dependent); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, owner, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(owner), owner); err != nil {
		t.Fatalf("the owner deleted in the Foreground: %v; want it kept with its finalizer", err)
	}
	if !slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents) || owner.DeletionTimestamp == nil {
		t.Errorf("owner: finalizers %v, deletionTimestamp %v; want foregroundDeletion, set", owner.Finalizers, owner.DeletionTimestamp)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(dependent), dependent); err != nil {
		t.Errorf("the dependent: %v; want it kept", err)
	}

	// The namespace controller: a deleted namespace stays Terminating.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns); err != nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("deleted namespace: %v, phase %q; want it Terminating", err, ns.Status.Phase)
	}

	// The disruption controller: a budget's status is never computed.
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "budget", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{}}}
	if err := c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil || pdb.Status.ObservedGeneration != 0 {
		t.Errorf("budget: %v, status %+v; want no status", err, pdb.Status)
	}

	// No kubelet: a pod bound to a node and deleted gracefully stays
	// Terminating (nothing confirms its end); an unbound one goes at once,
	// after a write of its deletionTimestamp, as kube-apiserver deletes it.
	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-0", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	unbound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unbound", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	for _, p := range []*corev1.Pod{bound, unbound} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	wc, err := client.NewWithWatch(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace("default"), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: unbound.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, p := range []*corev1.Pod{bound, unbound} {
		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(bound), bound); err != nil || bound.DeletionTimestamp == nil {
		t.Errorf("bound pod after its deletion: %v, deletionTimestamp %v; want it Terminating", err, bound.DeletionTimestamp)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(unbound), unbound); !apierrors.IsNotFound(err) {
		t.Errorf("unbound pod after its deletion: %v; want it gone", err)
	}
	var events []string
	for ev := range w.ResultChan() {
		p := ev.Object.(*corev1.Pod)
		events = append(events, fmt.Sprintf("%s %s deleting=%t", ev.Type, p.Name, p.DeletionTimestamp != nil))
		if ev.Type == watch.Deleted {
			break
		}
	}
	wantEvents := []string{"MODIFIED bound deleting=true", "MODIFIED unbound deleting=true", "DELETED unbound deleting=true"}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("watch events of the deletions mismatch (-want +got):\n%s", diff)
	}

	// No kubelet: no Nodes, and a pod stays unbound.
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil || len(nodes.Items) != 0 {
		t.Errorf("nodes: %v, %d; want none", err, len(nodes.Items))
	}
	if err := c.Create(ctx, deployment("web", 2)); err != nil {
		t.Fatal(err)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, line := range env.Trace() {
		for _, who := range builtinClients {
			if strings.Contains(line, "from "+who) {
				t.Errorf("a built-in controller ran: %s", line)
			}
		}
	}
}

// Controllers: clustertest.AllControllers runs the bench's own: a
// Deployment rolls out to ready pods bound to registered Nodes, and the
// garbage collector and namespace controller do their work.
func TestControllersRunsTheBenchsControllers(t *testing.T) {
	env := &envtest.Environment{Controllers: clustertest.AllControllers}
	c := start(t, env)
	ctx := t.Context()

	d := deployment("web", 2)
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, env, &appsv1.DeploymentList{}, func() bool {
		got := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
			t.Fatal(err)
		}
		return got.Status.AvailableReplicas == 2 && got.Status.ObservedGeneration == got.Generation
	})
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &n); err != nil {
			t.Errorf("pod %s is bound to node %q: %v", p.Name, p.Spec.NodeName, err)
		}
	}

	// The garbage collector deletes the Deployment's ReplicaSet and pods.
	if err := c.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, env, &corev1.PodList{}, func() bool {
		var left corev1.PodList
		if err := c.List(ctx, &left, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
			t.Fatal(err)
		}
		return len(left.Items) == 0
	})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns); !apierrors.IsNotFound(err) {
		t.Errorf("the empty namespace after its deletion: %v, phase %q; want it gone", err, ns.Status.Phase)
	}
}

// waitFor returns once cond holds: it checks it now and after each event
// of a watch of list's kind, so it waits for the cluster to change, not
// for time to pass. The test's deadline bounds it.
func waitFor(t *testing.T, env *envtest.Environment, list client.ObjectList, cond func() bool) {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w, err := wc.Watch(ctx, list, client.InNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if cond() {
		return
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch: %v", ev.Object)
		}
		if cond() {
			return
		}
	}
	t.Fatal("the watch ended before the condition held")
}
