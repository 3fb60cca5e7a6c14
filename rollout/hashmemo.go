package rollout

import (
	"reflect"
	"runtime"
	"sync"
	"weak"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Hashing a template renders it as text first (see [ComputeHash]), which
// costs more than the rest of a rollout step's decision. A controller
// decides again and again on the same Deployment object (its cache hands
// out one object until the Deployment changes), so the hash of the last
// template hashed for each Deployment object is remembered.
//
// An entry is found by the identity of the template's containers (the
// backing array of spec.template.spec.containers, which a Deployment
// object shares with its shallow copies, such as the one Sync works on),
// through a weak pointer: the memo keeps nothing alive, and an entry goes
// when its array is collected. It holds a private copy of the template it
// was computed from and the collision count, and is used only when the
// template and count are still deeply equal to them: an object changed in
// place (which callers must not do, but may), or two objects sharing one
// array, are hashed again, never answered from memory. A template without
// containers (which the API server rejects) is not remembered.
var hashMemo = struct {
	sync.Mutex
	m map[weak.Pointer[corev1.Container]]*hashEntry
}{m: map[weak.Pointer[corev1.Container]]*hashEntry{}}

type hashEntry struct {
	template  corev1.PodTemplateSpec
	collision *int32
	hash      string
}

// templateHash returns ComputeHash(&d.Spec.Template, d.Status.CollisionCount),
// from the memo when d was hashed before with the same template and count.
func templateHash(d *appsv1.Deployment) string {
	containers := d.Spec.Template.Spec.Containers
	if len(containers) == 0 {
		return ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	}
	key := weak.Make(&containers[0])
	hashMemo.Lock()
	e := hashMemo.m[key]
	hashMemo.Unlock()
	if e != nil && equalCount(e.collision, d.Status.CollisionCount) && reflect.DeepEqual(&e.template, &d.Spec.Template) {
		return e.hash
	}
	n := &hashEntry{hash: ComputeHash(&d.Spec.Template, d.Status.CollisionCount)}
	d.Spec.Template.DeepCopyInto(&n.template)
	if c := d.Status.CollisionCount; c != nil {
		v := *c
		n.collision = &v
	}
	hashMemo.Lock()
	_, known := hashMemo.m[key]
	hashMemo.m[key] = n
	hashMemo.Unlock()
	if !known {
		runtime.AddCleanup(&containers[0], forgetHash, key)
	}
	return n.hash
}

// forgetHash drops the entry of a collected array of containers.
func forgetHash(key weak.Pointer[corev1.Container]) {
	hashMemo.Lock()
	delete(hashMemo.m, key)
	hashMemo.Unlock()
}

func equalCount(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
