package plugin

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// now is the fixed time of every fixture.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// world is a Deployment mid-rollout: old ReplicaSet (nginx:1, revision 1)
// and new (image, revision 2), with pods built by the test.
type world struct {
	d        *appsv1.Deployment
	old, new *appsv1.ReplicaSet
	pods     []*corev1.Pod
}

// newWorld builds web: replicas, 25%/25%, rolling from nginx:1 to img
// with oldN/newN ReplicaSet sizes; no pods yet.
func newWorld(replicas, oldN, newN int32, img string) *world {
	lbl := map[string]string{"app": "web"}
	surge, unavail := intstr.FromString("25%"), intstr.FromString("25%")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "d-uid", Generation: 2,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "2"}, CreationTimestamp: ago(time.Hour)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}},
			ProgressDeadlineSeconds: ptr(int32(600)),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img}}}},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2},
	}
	mk := func(rev int64, image string, n int32, created time.Duration) *appsv1.ReplicaSet {
		t := d.Spec.Template.DeepCopy()
		t.Spec.Containers[0].Image = image
		hash := rollout.ComputeHash(t, nil)
		t.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Namespace: "shop", UID: types.UID("rs-" + image),
				Labels: t.Labels, CreationTimestamp: ago(created),
				Annotations:     map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(rev)},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
			Spec: appsv1.ReplicaSetSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: t.Labels}, Template: *t},
		}
	}
	w := &world{d: d, old: mk(1, "nginx:1", oldN, time.Hour), new: mk(2, img, newN, 10*time.Minute)}
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
		Reason: "ReplicaSetUpdated", LastUpdateTime: ago(time.Minute), LastTransitionTime: ago(10 * time.Minute)}}
	return w
}

// pod adds a pod of rs, changed by opts, and returns it.
func (w *world) pod(rs *appsv1.ReplicaSet, i int, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", rs.Name, i), Namespace: "shop", UID: types.UID(fmt.Sprintf("%s-%d", rs.UID, i)),
			Labels: rs.Spec.Template.Labels, CreationTimestamp: ago(5 * time.Minute),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
	p.Spec.NodeName = "node-1"
	for _, o := range opts {
		o(p)
	}
	w.pods = append(w.pods, p)
	return p
}

// ready makes a pod Running and Ready since d ago, 2 s after creation.
func readyFor(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.CreationTimestamp = ago(d + 2*time.Second)
		start := ago(d + time.Second)
		p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &start
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ago(d)}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
}

func waiting(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	}
}

func crashing(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: p.Spec.Containers[0].Image, RestartCount: 4,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}
}

func runningNotReady(p *corev1.Pod) {
	start := ago(4 * time.Minute)
	p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &start
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: p.Spec.Containers[0].Image,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

func unschedulable(p *corev1.Pod) {
	p.Spec.NodeName = ""
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}}
}

// settle fills the ReplicaSets' and the Deployment's status counts from
// the pods.
func (w *world) settle() {
	for _, rs := range []*appsv1.ReplicaSet{w.old, w.new} {
		rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation, Conditions: rs.Status.Conditions}
		for _, p := range w.pods {
			if !metav1.IsControlledBy(p, rs) || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				continue // as the ReplicaSet controller counts
			}
			rs.Status.Replicas++
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					rs.Status.ReadyReplicas++
					rs.Status.AvailableReplicas++
				}
			}
		}
	}
	st := &w.d.Status
	st.Replicas = w.old.Status.Replicas + w.new.Status.Replicas
	st.UpdatedReplicas = w.new.Status.Replicas
	st.ReadyReplicas = w.old.Status.ReadyReplicas + w.new.Status.ReadyReplicas
	st.AvailableReplicas = w.old.Status.AvailableReplicas + w.new.Status.AvailableReplicas
}

func (w *world) state() *State {
	w.settle()
	return &State{Deployment: w.d, ReplicaSets: []*appsv1.ReplicaSet{w.old, w.new}, Pods: w.pods}
}

// stuckImage is 4 replicas rolling to a bad image: 3 old pods available,
// 2 new ones failing to pull.
func stuckImage() *world {
	w := newWorld(4, 3, 2, "nginx:nope")
	for i := range 3 {
		w.pod(w.old, i, readyFor(time.Hour))
	}
	for i := range 2 {
		w.pod(w.new, i, waiting("ImagePullBackOff", `Back-off pulling image "nginx:nope"`))
	}
	return w
}

func ptr[T any](v T) *T { return &v }
