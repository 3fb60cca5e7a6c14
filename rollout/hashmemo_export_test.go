package rollout

import (
	"weak"

	appsv1 "k8s.io/api/apps/v1"
)

func memoKeyOf(d *appsv1.Deployment) weak.Pointer[appsv1.Deployment] { return weak.Make(d) }

func memoHas(key weak.Pointer[appsv1.Deployment]) bool {
	hashMemo.Lock()
	defer hashMemo.Unlock()
	_, ok := hashMemo.m[key]
	return ok
}
