package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Deployment sets what kube-apiserver v1.37 sets on an apps/v1 Deployment
// on create and update: replicas 1, strategy RollingUpdate with
// maxUnavailable and maxSurge 25% (rollingUpdate only for that strategy),
// revisionHistoryLimit 10, progressDeadlineSeconds 600, and the [PodSpec]
// defaults of its template.
func Deployment(d *appsv1.Deployment) {
	if d == nil {
		return
	}
	s := &d.Spec
	if s.Replicas == nil {
		s.Replicas = ptr[int32](1)
	}
	if s.Strategy.Type == "" {
		s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		ru := s.Strategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr(intstr.FromString("25%"))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptr(intstr.FromString("25%"))
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr[int32](10)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = ptr[int32](600)
	}
	PodSpec(&s.Template.Spec)
}

// ReplicaSet sets what kube-apiserver v1.37 sets on an apps/v1 ReplicaSet
// on create and update: replicas 1, and the [PodSpec] defaults of its
// template.
func ReplicaSet(rs *appsv1.ReplicaSet) {
	if rs == nil {
		return
	}
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr[int32](1)
	}
	PodSpec(&rs.Spec.Template.Spec)
}

// StatefulSet sets what kube-apiserver v1.37 sets on an apps/v1
// StatefulSet on create and update: replicas 1, podManagementPolicy
// OrderedReady, revisionHistoryLimit 10; updateStrategy RollingUpdate
// (with an empty rollingUpdate when the type was unset), and a
// rollingUpdate's partition 0 and maxUnavailable 1 (the
// MaxUnavailableStatefulSet gate is on in v1.37); a
// persistentVolumeClaimRetentionPolicy of Retain when deleted and when
// scaled; the [PodSpec] defaults of its template; and on each volume
// claim template what a [PersistentVolumeClaim] gets, its status phase
// Pending included.
func StatefulSet(ss *appsv1.StatefulSet) {
	if ss == nil {
		return
	}
	s := &ss.Spec
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := s.UpdateStrategy.RollingUpdate; ru != nil && s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if ru.Partition == nil {
			ru.Partition = ptr[int32](0)
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr(intstr.FromInt32(1))
		}
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	rp := s.PersistentVolumeClaimRetentionPolicy
	setEmpty(&rp.WhenDeleted, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	setEmpty(&rp.WhenScaled, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	if s.Replicas == nil {
		s.Replicas = ptr[int32](1)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr[int32](10)
	}
	PodSpec(&s.Template.Spec)
	for i := range s.VolumeClaimTemplates {
		PersistentVolumeClaim(&s.VolumeClaimTemplates[i])
	}
}

// DaemonSet sets what kube-apiserver v1.37 sets on an apps/v1 DaemonSet on
// create and update: updateStrategy RollingUpdate with maxUnavailable 1
// and maxSurge 0 (rollingUpdate only for that strategy),
// revisionHistoryLimit 10, and the [PodSpec] defaults of its template.
func DaemonSet(ds *appsv1.DaemonSet) {
	if ds == nil {
		return
	}
	s := &ds.Spec
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		ru := s.UpdateStrategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr(intstr.FromInt32(1))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptr(intstr.FromInt32(0))
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr[int32](10)
	}
	PodSpec(&s.Template.Spec)
}
