package deployment_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// completeState builds a complete Deployment of 10 replicas with 10
// ReplicaSets: nine old ones at 0 and the current one at 10, all settled,
// as the controller would have left them. With recreatePods > 0 the
// strategy is Recreate and the new ReplicaSet has that many pods.
func completeState(b *testing.B, recreatePods int) deployment.State {
	b.Helper()
	d := newDeployment(10, "web:v9")
	if recreatePods > 0 {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	d.UID, d.Generation = "d-uid", 10
	var rss []*appsv1.ReplicaSet
	var newRS *appsv1.ReplicaSet
	for i := 0; i < 10; i++ {
		dd := d.DeepCopy()
		dd.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("web:v%d", i)
		rs, err := rollout.NewReplicaSet(dd, rss)
		if err != nil {
			b.Fatal(err)
		}
		rs.UID = types.UID(fmt.Sprintf("rs-%d", i))
		rs.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(10-i) * time.Minute))
		n := int32(0)
		if i == 9 {
			n = 10
			newRS = rs
		}
		rs, _ = rollout.SetReplicasAnnotations(rs, 10, 10+ptrVal(ptr(int32(3))))
		if recreatePods > 0 {
			rs, _ = rollout.SetReplicasAnnotations(rs, 10, 10)
		}
		rs.Spec.Replicas = &n
		rs.Generation = 1
		rs.Status = appsv1.ReplicaSetStatus{Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n, ObservedGeneration: 1, TerminatingReplicas: ptr(int32(0))}
		rss = append(rss, rs)
	}
	s := deployment.State{Deployment: d, ReplicaSets: rss}
	if recreatePods > 0 {
		s.Pods = map[types.UID][]*corev1.Pod{}
		for _, rs := range rss {
			s.Pods[rs.UID] = nil
		}
		s.Pods[newRS.UID] = podsOf(&appsv1.ReplicaSet{ObjectMeta: newRS.ObjectMeta, Status: appsv1.ReplicaSetStatus{Replicas: int32(recreatePods)}}, 0, t0)
	}
	// Let the controller write the status once; the benchmark then syncs a
	// Deployment whose stored status is current.
	p, err := deployment.Sync(s, t0)
	if err != nil {
		b.Fatal(err)
	}
	if p.UpdateStatus != nil {
		s.Deployment = p.UpdateStatus.DeepCopy()
	}
	if p, _ := deployment.Sync(s, t0); !p.IsEmpty() {
		b.Fatalf("fixture is not at a fixed point:\n%s", p)
	}
	return s
}

func benchSync(b *testing.B, s deployment.State) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := deployment.Sync(s, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncNoop syncs a complete RollingUpdate Deployment with 10
// ReplicaSets: the plan is empty.
func BenchmarkSyncNoop(b *testing.B) { benchSync(b, completeState(b, 0)) }

// BenchmarkSyncNoopRecreate is the same for Recreate with 1,000 pods.
func BenchmarkSyncNoopRecreate(b *testing.B) { benchSync(b, completeState(b, 1000)) }

// BenchmarkSyncRolloutStep syncs right after a template change: create the
// new ReplicaSet and scale the old one down.
func BenchmarkSyncRolloutStep(b *testing.B) {
	s := completeState(b, 0)
	d := s.Deployment.DeepCopy()
	d.Spec.Template.Spec.Containers[0].Image = "web:v10"
	d.Generation++
	s.Deployment = d
	benchSync(b, s)
}
