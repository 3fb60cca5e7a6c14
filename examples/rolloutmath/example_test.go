package rolloutmath_test

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/rollout"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// web is a Deployment of replicas pods of image, rolling with surge and
// unavailable.
func web(replicas int32, image, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "d-1", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}},
		},
	}
}

// replicaSet is a ReplicaSet of d's with the given template image, size
// and available pods.
func replicaSet(d *appsv1.Deployment, name, image string, replicas, available int32, age time.Duration) *appsv1.ReplicaSet {
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Spec.Containers[0].Image = image
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(now.Add(-age)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: d.Spec.Selector, Template: *tmpl},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available},
	}
}

// Surge is rounded up and unavailability down, each against the desired
// replicas; when both come to zero, one pod may be unavailable.
func Example_fenceposts() {
	for _, c := range []struct {
		surge, unavailable string
		replicas           int32
	}{{"25%", "25%", 10}, {"25%", "25%", 3}, {"0", "0", 5}, {"100%", "0", 4}} {
		s, u := intstr.Parse(c.surge), intstr.Parse(c.unavailable)
		surge, unavailable, err := rollout.ResolveFenceposts(&s, &u, c.replicas)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("replicas=%d maxSurge=%s maxUnavailable=%s: up to %d pods, at least %d available\n",
			c.replicas, c.surge, c.unavailable, c.replicas+surge, c.replicas-unavailable)
	}
	// Output:
	// replicas=10 maxSurge=25% maxUnavailable=25%: up to 13 pods, at least 8 available
	// replicas=3 maxSurge=25% maxUnavailable=25%: up to 4 pods, at least 3 available
	// replicas=5 maxSurge=0 maxUnavailable=0: up to 5 pods, at least 4 available
	// replicas=4 maxSurge=100% maxUnavailable=0: up to 8 pods, at least 4 available
}

// One rolling step, half way through a rollout: the new ReplicaSet cannot
// grow (the surge is used up), and the old one shrinks by what is
// available beyond the minimum.
func ExampleRolling() {
	d := web(10, "web:2", "25%", "25%")
	oldRS := replicaSet(d, "web-old", "web:1", 8, 8, time.Hour)
	newRS := replicaSet(d, "web-new", "web:2", 5, 3, time.Minute)
	step, err := rollout.Rolling(d, newRS, []*appsv1.ReplicaSet{oldRS})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range step.Scales {
		fmt.Println(s)
	}
	// 8 + 3 = 11 available, minimum 8: three old pods may go.
	// Output:
	// scale rs/web-old 8→5
}

// The size of the new ReplicaSet, as the surge allows.
func ExampleNewRSNewReplicas() {
	d := web(10, "web:2", "3", "0")
	oldRS := replicaSet(d, "web-old", "web:1", 10, 10, time.Hour)
	newRS := replicaSet(d, "web-new", "web:2", 0, 0, 0)
	n, err := rollout.NewRSNewReplicas(d, []*appsv1.ReplicaSet{oldRS, newRS}, newRS)
	fmt.Println(n, err)
	// Output:
	// 3 <nil>
}

// A whole rollout, with deployment.Sync alone: apply each plan to the
// objects in memory, let the new pods become available, and sync again
// until the plan writes nothing. This is how to test rollout behaviour
// (here: never more than 10+2 pods, never fewer than 10-1 available)
// in microseconds, with no cluster.
func Example_wholeRollout() {
	d := web(10, "web:1", "2", "1")
	var rss []*appsv1.ReplicaSet // what the cluster holds
	d, rss = syncUntilStable(d, rss)
	fmt.Println("-- update to web:2")
	d = d.DeepCopy()
	d.Spec.Template.Spec.Containers[0].Image = "web:2"
	d.Generation++
	syncUntilStable(d, rss)
	// Output:
	// create rs/web-6c7874fc5f replicas=10 revision=1 pods=10 available=0
	// -- update to web:2
	// create rs/web-5955c6c578 replicas=2 revision=2 pods=12 available=10
	// scale rs/web-6c7874fc5f 10→9                 pods=11 available=9
	// scale rs/web-5955c6c578 2→3                  pods=12 available=11
	// scale rs/web-6c7874fc5f 9→6                  pods=9 available=9
	// scale rs/web-5955c6c578 3→6                  pods=12 available=9
	// scale rs/web-6c7874fc5f 6→3                  pods=9 available=9
	// scale rs/web-5955c6c578 6→9                  pods=12 available=9
	// scale rs/web-6c7874fc5f 3→0                  pods=9 available=9
	// scale rs/web-5955c6c578 9→10                 pods=10 available=9
}

// syncUntilStable syncs d until its plan writes nothing. After each sync
// it applies the plan to d and rss, prints the ReplicaSet writes and the
// pod counts, then makes every pod asked for available.
func syncUntilStable(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (*appsv1.Deployment, []*appsv1.ReplicaSet) {
	t := now
	for range 100 {
		t = t.Add(time.Second)
		plan, err := deployment.Sync(deployment.State{Deployment: d, ReplicaSets: rss}, t)
		if err != nil {
			fmt.Println(err)
			return d, rss
		}
		if !plan.HasWrites() {
			return d, rss
		}
		rss = slices.Clone(rss) // never modify what Sync was given
		for _, a := range plan.Actions {
			switch a := a.(type) {
			case deployment.CreateReplicaSet:
				rs := a.ReplicaSet.DeepCopy()
				rs.UID, rs.CreationTimestamp = types.UID("uid-"+rs.Name), metav1.NewTime(t)
				rss = append(rss, rs)
			case deployment.ScaleReplicaSet:
				rss = replace(rss, a.ReplicaSet)
			case deployment.UpdateReplicaSet:
				rss = replace(rss, a.ReplicaSet)
			case deployment.DeleteReplicaSet:
				rss = slices.DeleteFunc(rss, func(rs *appsv1.ReplicaSet) bool { return rs.UID == a.UID })
			}
			switch a.(type) {
			case deployment.CreateReplicaSet, deployment.ScaleReplicaSet, deployment.DeleteReplicaSet:
				fmt.Printf("%-44s", a)
			default:
				continue
			}
			var pods, available int32
			for _, rs := range rss {
				pods += *rs.Spec.Replicas
				available += min(rs.Status.AvailableReplicas, *rs.Spec.Replicas)
			}
			fmt.Printf(" pods=%d available=%d\n", pods, available)
		}
		if plan.UpdateStatus != nil {
			d = plan.UpdateStatus.DeepCopy()
		}
		for i, rs := range rss { // the ReplicaSet controller and the kubelet, in one line
			rs = rs.DeepCopy()
			n := *rs.Spec.Replicas
			rs.Status = appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: n, AvailableReplicas: n, ObservedGeneration: rs.Generation}
			rss[i] = rs
		}
	}
	return d, rss
}

// replace returns rss with the ReplicaSet of rs's UID replaced by a copy of rs.
func replace(rss []*appsv1.ReplicaSet, rs *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := slices.Clone(rss)
	for i := range out {
		if out[i].UID == rs.UID {
			out[i] = rs.DeepCopy()
		}
	}
	return out
}
