package defaults_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// A StatefulSet built in Go, defaulted as kube-apiserver would store it.
func ExampleStatefulSet() {
	ss := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		ServiceName: "db",
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "db", Image: "postgres:17"}},
		}},
	}}
	defaults.StatefulSet(ss)
	s := ss.Spec
	fmt.Println("replicas:", *s.Replicas)
	fmt.Println("podManagementPolicy:", s.PodManagementPolicy)
	fmt.Println("updateStrategy:", s.UpdateStrategy.Type, "partition", *s.UpdateStrategy.RollingUpdate.Partition,
		"maxUnavailable", s.UpdateStrategy.RollingUpdate.MaxUnavailable)
	fmt.Println("revisionHistoryLimit:", *s.RevisionHistoryLimit)
	fmt.Println("pvc retention:", s.PersistentVolumeClaimRetentionPolicy.WhenDeleted, s.PersistentVolumeClaimRetentionPolicy.WhenScaled)
	c := s.Template.Spec.Containers[0]
	fmt.Println("container:", c.ImagePullPolicy, c.TerminationMessagePath, c.TerminationMessagePolicy)
	fmt.Println("pod:", s.Template.Spec.RestartPolicy, s.Template.Spec.DNSPolicy, *s.Template.Spec.TerminationGracePeriodSeconds, s.Template.Spec.SchedulerName)
	// Output:
	// replicas: 1
	// podManagementPolicy: OrderedReady
	// updateStrategy: RollingUpdate partition 0 maxUnavailable 1
	// revisionHistoryLimit: 10
	// pvc retention: Retain Retain
	// container: IfNotPresent /dev/termination-log File
	// pod: Always ClusterFirst 30 default-scheduler
}
