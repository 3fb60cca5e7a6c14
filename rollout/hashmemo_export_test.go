package rollout

import (
	"weak"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func memoKeyOf(d *appsv1.Deployment) weak.Pointer[corev1.Container] {
	return weak.Make(&d.Spec.Template.Spec.Containers[0])
}

func memoHas(key weak.Pointer[corev1.Container]) bool {
	hashMemo.Lock()
	defer hashMemo.Unlock()
	_, ok := hashMemo.m[key]
	return ok
}
