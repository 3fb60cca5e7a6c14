package deployment_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// fuzzState builds a State from a seed: random strategies (malformed
// fenceposts and nil rollingUpdate included), replica counts (negative and
// huge ones with wild), pause, rollback and deletion, and up to six
// ReplicaSets that are owned, orphaned, someone else's, templated like the
// Deployment or not, with valid, invalid or missing annotations, nil
// replicas, deletion timestamps and nil entries, plus their pods.
func fuzzState(seed uint64, wild bool) deployment.State {
	r := rand.New(rand.NewPCG(seed, 0xf022))
	count := func() int32 {
		switch k := r.IntN(16); {
		case wild && k == 0:
			return -int32(r.IntN(3))
		case wild && k == 1:
			return 1<<31 - 1 - int32(r.IntN(3))
		default:
			return int32(r.IntN(12))
		}
	}
	fencepost := func() *intstr.IntOrString {
		vals := []string{"0", "1", "3", "25%", "50%", "100%"}
		if wild {
			vals = append(vals, "abc%", "-5%", "", "1.5%", "200%")
			if r.IntN(8) == 0 {
				return nil
			}
		}
		v := intstr.Parse(vals[r.IntN(len(vals))])
		return &v
	}
	images := []string{"web:v1", "web:v2", "web:v3"}
	d := newDeployment(count(), images[r.IntN(3)])
	d.UID = "d-uid"
	d.Generation = int64(1 + r.IntN(4))
	d.Status.ObservedGeneration = d.Generation - int64(r.IntN(2))
	switch r.IntN(4) {
	case 0:
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	default:
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: fencepost(), MaxUnavailable: fencepost()}
		if wild && r.IntN(10) == 0 {
			d.Spec.Strategy.RollingUpdate = nil
		}
	}
	d.Spec.Paused = r.IntN(6) == 0
	if wild && r.IntN(8) == 0 {
		d.Spec.Replicas = nil
	}
	if r.IntN(6) == 0 {
		setRollbackTo([]string{"0", "1", "2", "x"}[r.IntN(4)])(d)
	}
	if r.IntN(12) == 0 {
		ts := metav1.NewTime(t0)
		d.DeletionTimestamp = &ts
	}
	if r.IntN(3) == 0 {
		d.Spec.ProgressDeadlineSeconds = nil
	}
	s := deployment.State{Deployment: d, Pods: map[types.UID][]*corev1.Pod{}}
	for i := range r.IntN(7) {
		if wild && r.IntN(12) == 0 {
			s.ReplicaSets = append(s.ReplicaSets, nil)
			continue
		}
		tpl := d.Spec.Template.DeepCopy()
		tpl.Spec.Containers[0].Image = images[r.IntN(3)]
		hash := rollout.ComputeHash(tpl, nil)
		tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		spec := count()
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: fmt.Sprintf("web-%s-%d", hash, i), UID: types.UID(fmt.Sprintf("rs-%d", i)),
				Labels:            map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash},
				CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(r.IntN(5)) * time.Minute)),
				Generation:        int64(1 + r.IntN(2)),
				Annotations:       map[string]string{rollout.RevisionAnnotation: fmt.Sprint(r.IntN(6))},
			},
			Spec: appsv1.ReplicaSetSpec{Replicas: &spec, Template: *tpl,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}}},
		}
		avail := min(count(), max(spec, 0))
		rs.Status = appsv1.ReplicaSetStatus{Replicas: count(), ReadyReplicas: avail, AvailableReplicas: avail, ObservedGeneration: 1}
		switch r.IntN(5) {
		case 0: // orphan
		case 1:
			rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "other", UID: "other", Controller: ptr(true)}}
		default:
			rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
		}
		switch r.IntN(5) {
		case 0:
			rs.Annotations[rollout.DesiredReplicasAnnotation] = fmt.Sprint(count())
			rs.Annotations[rollout.MaxReplicasAnnotation] = fmt.Sprint(count())
		case 1:
			if wild {
				rs.Annotations[rollout.DesiredReplicasAnnotation] = "zz"
				rs.Annotations[rollout.RevisionAnnotation] = "x"
			}
		}
		if wild && r.IntN(8) == 0 {
			rs.Spec.Replicas = nil
		}
		if r.IntN(10) == 0 {
			ts := metav1.NewTime(t0)
			rs.DeletionTimestamp = &ts
		}
		for j := range r.IntN(4) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: fmt.Sprintf("%s-%d", rs.Name, j)},
				Status: corev1.PodStatus{Phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, ""}[r.IntN(4)]}}
			s.Pods[rs.UID] = append(s.Pods[rs.UID], p)
		}
		if wild && r.IntN(10) == 0 {
			s.Pods[rs.UID] = append(s.Pods[rs.UID], nil)
		}
		s.ReplicaSets = append(s.ReplicaSets, rs)
	}
	return s
}

// FuzzSync runs Sync on arbitrary states: it never panics or modifies its
// input; an error comes with an empty plan; and every scale starts from the
// size the snapshot (or an earlier action of the plan) gave the
// ReplicaSet.
func FuzzSync(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed, seed%2 == 0)
	}
	f.Fuzz(func(t *testing.T, seed uint64, wild bool) {
		s := fuzzState(seed, wild)
		before := deepCopyState(s)
		plan, err := deployment.Sync(s, t0.Add(time.Hour))
		if diff := cmp.Diff(before, s); diff != "" {
			t.Fatalf("Sync modified its input (-before +after):\n%s", diff)
		}
		_ = plan.String()
		if err != nil {
			if !plan.IsEmpty() {
				t.Fatalf("Sync returned %v and a plan:\n%s", err, plan)
			}
			return
		}
		size := map[string]int32{}
		for _, rs := range s.ReplicaSets {
			if rs != nil {
				size[rs.Name] = rollout.ReplicasOrDefault(rs.Spec.Replicas)
			}
		}
		for _, a := range plan.Actions {
			switch a := a.(type) {
			case deployment.ScaleReplicaSet:
				if cur, ok := size[a.ReplicaSet.Name]; !ok || cur != a.From || *a.ReplicaSet.Spec.Replicas != a.To {
					t.Fatalf("%s: the ReplicaSet's size was %d (known: %v)\nplan:\n%s", a, cur, ok, plan)
				}
				size[a.ReplicaSet.Name] = a.To
			case deployment.CreateReplicaSet:
				if _, ok := size[a.ReplicaSet.Name]; ok {
					t.Fatalf("%s: that name exists\nplan:\n%s", a, plan)
				}
				size[a.ReplicaSet.Name] = *a.ReplicaSet.Spec.Replicas
			case deployment.UpdateReplicaSet:
				size[a.ReplicaSet.Name] = rollout.ReplicasOrDefault(a.ReplicaSet.Spec.Replicas)
			}
		}
	})
}
