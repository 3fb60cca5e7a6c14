package replicaset_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// exampleRS returns a ReplicaSet "web" wanting n pods labelled app=web.
func exampleRS(n int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-uid", Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
}

// examplePod returns a pod of rs on node, ready since readyAt (zero: not
// ready).
func examplePod(rs *appsv1.ReplicaSet, name, node string, readyAt time.Time) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: types.UID(name),
			Labels:            map[string]string{"app": "web"},
			OwnerReferences:   []metav1.OwnerReference{*replicaset.NewControllerRef(rs)},
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if !readyAt.IsZero() {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readyAt)}}
	}
	return p
}

// ManageReplicas decides without doing: scaling 4 pods down to 2 deletes
// the unscheduled pod and the one that is not ready, and asks the caller to
// wait for their deletion before deciding again.
func ExampleManageReplicas() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rs := exampleRS(2)
	pods := []*corev1.Pod{
		examplePod(rs, "web-a", "node-1", now.Add(-time.Hour)),
		examplePod(rs, "web-b", "node-1", time.Time{}),
		examplePod(rs, "web-c", "", time.Time{}),
		examplePod(rs, "web-d", "node-2", now.Add(-time.Hour)),
	}
	plan, err := replicaset.ManageReplicas(replicaset.Input{
		ReplicaSet: rs, Active: pods, ExpectationsSatisfied: true,
	}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(plan)
	// Output:
	// delete 2 pods web-c, web-b
	// expect 2 deletions
	// status replicas=4 fullyLabeled=4 ready=2 available=2 terminating=0 observedGeneration=1
}

// CalculateStatus counts pods and records a failed round in the
// ReplicaFailure condition.
func ExampleCalculateStatus() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rs := exampleRS(3)
	rs.Spec.MinReadySeconds = 60
	pods := []*corev1.Pod{
		examplePod(rs, "web-a", "node-1", now.Add(-time.Hour)),   // available
		examplePod(rs, "web-b", "node-1", now.Add(-time.Second)), // ready, not yet available
	}
	st, err := replicaset.CalculateStatus(rs, pods, nil, errors.New("pods \"web\" is forbidden: exceeded quota"), now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("replicas=%d ready=%d available=%d\n", st.Replicas, st.ReadyReplicas, st.AvailableReplicas)
	for _, c := range st.Conditions {
		fmt.Printf("%s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	next, _ := replicaset.NextAvailabilityCheck(pods, rs.Spec.MinReadySeconds, now, now)
	fmt.Println("check again in", next)
	// Output:
	// replicas=2 ready=2 available=1
	// ReplicaFailure=True FailedCreate: pods "web" is forbidden: exceeded quota
	// check again in 59s
}

// A Reconciler reads through the caller's caches and writes through the
// caller's client; here both are a tiny in-memory API server.
func ExampleReconciler() {
	w := newWorld(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	w.addRS(exampleRS(3))
	r, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
		ReplicaSets: rsReader{w},
		Pods:        reconcile.ListerFunc[*corev1.Pod](w.listPods),
		Client:      w,
		Clock:       w.clock,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	key := types.NamespacedName{Namespace: "default", Name: "web"}
	for i := range 3 {
		if i == 2 {
			// A pod informer's handler reports each new pod; a Controller
			// does this itself.
			for range 3 {
				r.Expectations().CreationObserved(key)
			}
		}
		if _, err := r.Reconcile(context.Background(), key); err != nil {
			fmt.Println(err)
			return
		}
		st := w.rs(key).Status
		fmt.Printf("sync %d: pods %v, status.replicas %d, observedGeneration %d\n", i+1, names(w.snapshot()), st.Replicas, st.ObservedGeneration)
	}
	// Output:
	// sync 1: pods [web-p001 web-p002 web-p003], status.replicas 0, observedGeneration 0
	// sync 2: pods [web-p001 web-p002 web-p003], status.replicas 3, observedGeneration 0
	// sync 3: pods [web-p001 web-p002 web-p003], status.replicas 3, observedGeneration 1
}
