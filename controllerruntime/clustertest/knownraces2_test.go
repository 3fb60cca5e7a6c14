package clustertest_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// scaleDownScenario creates a ReplicaSet of from pods, waits until they
// all run, scales it down to to and waits until it has to ready pods.
func scaleDownScenario(from, to int32) clustertest.Scenario {
	return func(t testing.TB, c *clustertest.Cluster) {
		labels := map[string]string{"app": "db"}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			Spec: appsv1.ReplicaSetSpec{Replicas: &from, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}}}}
		if err := c.Client().Create(t.Context(), rs); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("scaled up", dbReady(t, c, from), time.Hour)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur appsv1.ReplicaSet
			if err := c.Client().Get(t.Context(), client.ObjectKeyFromObject(rs), &cur); err != nil {
				return err
			}
			cur.Spec.Replicas = &to
			return c.Client().Update(t.Context(), &cur)
		})
		if err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("scaled down", dbReady(t, c, to), time.Hour)
	}
}

func dbReady(t testing.TB, c *clustertest.Cluster, replicas int32) func() bool {
	return func() bool {
		var rs appsv1.ReplicaSet
		if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "db"}, &rs); err != nil {
			t.Fatal(err)
		}
		st := rs.Status
		return st.ObservedGeneration >= rs.Generation && st.Replicas == replicas && st.ReadyReplicas == replicas && st.AvailableReplicas == replicas
	}
}

// ambiguousPodDeletes: pod deletions that happen but answer an error (a
// response lost on the way back), and live reads of pods that fail, so
// that the ReplicaSet controller cannot tell at once whether a deletion
// happened.
func ambiguousPodDeletes() memcluster.Faults {
	return memcluster.Faults{Rules: []memcluster.FaultRule{
		{Verb: "delete", Resource: "pods", Rate: 1, Reason: metav1.StatusReasonServerTimeout, AfterWrite: true},
		{Verb: "get", Resource: "pods", Rate: 0.5, Reason: metav1.StatusReasonServiceUnavailable},
	}}
}
