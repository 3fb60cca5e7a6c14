package kube_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// Both controllers beside client-go's shared informers: the five lines
// after "user code". A fake clientset stands in for the cluster, and a
// goroutine for the kubelet.
func ExampleNewInformerControllers() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fakeCluster()
	go fakeKubelet(ctx, cs)

	// user code: wire both controllers to a shared informer factory.
	factory := informers.NewSharedInformerFactory(cs, 0)
	ctl, err := kube.NewInformerControllers(factory, cs, kube.InformerOptions{})
	if err != nil {
		panic(err)
	}
	factory.Start(ctx.Done())
	go func() { _ = ctl.Run(ctx) }()

	// The fake clientset applies no API defaults: spell them out.
	labels := map[string]string{"app": "web"}
	replicas, history, deadline := int32(3), int32(10), int32(600)
	quarter := intstr.FromString("25%")
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			RevisionHistoryLimit: &history, ProgressDeadlineSeconds: &deadline,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	d = waitRolledOut(ctx, cs, "default", "web")
	rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("deployment %s: %d updated, %d available\n", d.Name, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
	for _, rs := range rss.Items {
		fmt.Printf("rs %s: revision %s, %d ready\n", rs.Name, rs.Annotations[rollout.RevisionAnnotation], rs.Status.ReadyReplicas)
	}
	// Output:
	// deployment web: 3 updated, 3 available
	// rs web-74f8f75d46: revision 1, 3 ready
}

// fakeCluster is a fake clientset that, like an API server, sets
// resourceVersions and fills in generateName (client-go's fake does
// neither).
func fakeCluster() *fake.Clientset {
	cs := fake.NewClientset()
	var rv atomic.Int64
	var names atomic.Int64
	stamp := func(action k8stesting.Action) (bool, runtime.Object, error) {
		var obj runtime.Object
		switch a := action.(type) {
		case k8stesting.CreateAction:
			obj = a.GetObject()
		case k8stesting.UpdateAction:
			obj = a.GetObject()
		default:
			return false, nil, nil
		}
		if m, ok := obj.(metav1.Object); ok {
			m.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
			if m.GetName() == "" && m.GetGenerateName() != "" {
				m.SetName(m.GetGenerateName() + strconv.FormatInt(names.Add(1), 10))
			}
			if m.GetUID() == "" {
				m.SetUID(types.UID("uid-" + m.GetName()))
			}
		}
		return false, nil, nil
	}
	cs.PrependReactor("create", "*", stamp)
	cs.PrependReactor("update", "*", stamp)
	return cs
}

// fakeKubelet makes every new pod Running and Ready.
func fakeKubelet(ctx context.Context, cs kubernetes.Interface) {
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || p.Status.Phase == corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		p = p.DeepCopy()
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		_, _ = cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	}
}

// waitRolledOut watches the Deployment until kubectl rollout status would
// say it is done.
func waitRolledOut(ctx context.Context, cs kubernetes.Interface, ns, name string) *appsv1.Deployment {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	var last *appsv1.Deployment
	for {
		select {
		case ev := <-w.ResultChan():
			if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Name == name {
				last = d
				if st, err := rollout.Status(d, 0); err == nil && st.Done {
					return d
				}
			}
		case <-ctx.Done():
			panic(fmt.Sprintf("deployment %s did not roll out: %+v", name, last))
		}
	}
}
