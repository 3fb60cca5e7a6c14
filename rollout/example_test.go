package rollout_test

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

// web is a 10-replica Deployment rolling out image v2 with maxSurge 3 and
// maxUnavailable 2.
func web() *appsv1.Deployment {
	replicas := int32(10)
	surge, unavailable := intstr.FromInt32(3), intstr.FromInt32(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid", Generation: 2},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:v2"}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
		},
	}
}

// replicaSet is a ReplicaSet of the given size whose pods are all available.
func replicaSet(name string, size int32, image string, created time.Time) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &size,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
		Status: appsv1.ReplicaSetStatus{Replicas: size, ReadyReplicas: size, AvailableReplicas: size},
	}
}

// How many pods does each ReplicaSet get, step by step, in a 10-replica
// rollout with maxSurge 3 and maxUnavailable 2, when every new pod becomes
// available at once?
func ExampleRolling() {
	d := web()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	oldRS := replicaSet("web-old", 10, "web:v1", now)
	newRS := replicaSet("web-new", 0, "web:v2", now.Add(time.Minute))
	for i := 1; ; i++ {
		step, err := rollout.Rolling(d, newRS, []*appsv1.ReplicaSet{oldRS})
		if err != nil || len(step.Scales) == 0 {
			break
		}
		for _, s := range step.Scales {
			fmt.Printf("step %d: %v\n", i, s)
			switch s.ReplicaSet.Name { // apply, and let the pods become available
			case oldRS.Name:
				oldRS = replicaSet(oldRS.Name, s.To, "web:v1", now)
			case newRS.Name:
				newRS = replicaSet(newRS.Name, s.To, "web:v2", now.Add(time.Minute))
			}
		}
	}
	// Output:
	// step 1: scale rs/web-new 0→3
	// step 2: scale rs/web-old 10→5
	// step 3: scale rs/web-new 3→8
	// step 4: scale rs/web-old 5→0
	// step 5: scale rs/web-new 8→10
}

func ExampleResolveFenceposts() {
	pct := intstr.FromString("25%")
	for _, replicas := range []int32{0, 1, 4, 10} {
		surge, unavailable, err := rollout.ResolveFenceposts(&pct, &pct, replicas)
		fmt.Println(replicas, surge, unavailable, err)
	}
	bad := intstr.FromString("-5%")
	_, _, err := rollout.ResolveFenceposts(&bad, &pct, 100)
	fmt.Println(err)
	// Output:
	// 0 0 1 <nil>
	// 1 1 0 <nil>
	// 4 1 1 <nil>
	// 10 3 2 <nil>
	// rollout: maxSurge "-5%" is negative
}

// Scaling a Deployment from 10 to 15 replicas mid-rollout shares the 5
// extra pods (plus the surge room) out in proportion to each ReplicaSet's
// size.
func ExampleProportional() {
	d := web()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	oldRS := replicaSet("web-old", 8, "web:v1", now)
	newRS := replicaSet("web-new", 5, "web:v2", now.Add(time.Minute))
	for _, rs := range []*appsv1.ReplicaSet{oldRS, newRS} {
		rs.Annotations = map[string]string{rollout.DesiredReplicasAnnotation: "10", rollout.MaxReplicasAnnotation: "13"}
	}
	*d.Spec.Replicas = 15
	scales, err := rollout.Proportional(d, newRS, []*appsv1.ReplicaSet{oldRS})
	for _, s := range scales {
		fmt.Println(s, "annotations:", s.DesiredReplicas, s.MaxReplicas)
	}
	fmt.Println(err)
	// Output:
	// scale rs/web-old 8→11 annotations: 15 18
	// scale rs/web-new 5→7 annotations: 15 18
	// <nil>
}

func ExampleComputeHash() {
	d := web()
	hash := rollout.ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	fmt.Println(hash, rollout.ReplicaSetName(d.Name, hash))
	empty := corev1.PodTemplateSpec{}
	fmt.Println(rollout.ComputeHash(&empty, nil))
	// Output:
	// 58597d7d56 web-58597d7d56
	// 54f4c57dcb
}

func ExampleStatus() {
	d := web()
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 13, UpdatedReplicas: 3, AvailableReplicas: 10}
	res, _ := rollout.Status(d, 0)
	fmt.Print(res.Message)
	fmt.Println(res.Reason, res.Done)
	// Output:
	// Waiting for deployment "web" rollout to finish: 3 out of 10 new replicas have been updated...
	// UpdatingReplicas false
}

func ExampleSyncStatus() {
	d := web()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deadline := int32(600)
	d.Spec.ProgressDeadlineSeconds = &deadline
	newRS := replicaSet("web-new", 3, "web:v2", start)
	newRS.Status.AvailableReplicas = 0
	oldRS := replicaSet("web-old", 10, "web:v1", start)
	rss := []*appsv1.ReplicaSet{oldRS, newRS}

	first, _ := rollout.SyncStatus(d, rss, newRS, start)
	d.Status = first.Status // written by the caller
	second, _ := rollout.SyncStatus(d, rss, newRS, start.Add(4*time.Minute))
	fmt.Println(first.Changed, rollout.GetCondition(first.Status, appsv1.DeploymentProgressing).Reason)
	fmt.Println(second.Changed, second.Check.After)
	// Output:
	// true ReplicaSetUpdated
	// false 6m1s
}

func ExampleUndo() {
	d := web()
	d.Annotations = map[string]string{rollout.RevisionAnnotation: "2"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v1 := replicaSet("web-v1", 0, "web:v1", now)
	v1.Annotations = map[string]string{rollout.RevisionAnnotation: "1", rollout.ChangeCauseAnnotation: "first"}
	v2 := replicaSet("web-v2", 10, "web:v2", now.Add(time.Hour))
	v2.Annotations = map[string]string{rollout.RevisionAnnotation: "2"}

	res, err := rollout.Undo(d, []*appsv1.ReplicaSet{v1, v2}, 0)
	fmt.Println(res.Target.Name, res.Message, res.PatchType, err)
	fmt.Println(string(res.Patch))
	// Output:
	// web-v1 rolled back application/json-patch+json <nil>
	// [{"op":"replace","path":"/spec/template","value":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"web:v1","resources":{}}]}}},{"op":"replace","path":"/metadata/annotations","value":{"deployment.kubernetes.io/revision":"2","kubernetes.io/change-cause":"first"}}]
}
