package cluster

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/planner"
)

func traceDeployment(rv, image string, gen int64) *appsv1.Deployment {
	n := int32(4)
	lbl := map[string]string{"app": "d01"}
	surge, unavail := intstr.FromString("25%"), intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d01", UID: "d-uid", ResourceVersion: rv, Generation: gen,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "1"}},
		Spec: appsv1.DeploymentSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 4, ReadyReplicas: 4, AvailableReplicas: 4},
	}
}

func traceReplicaSet(name, rv, image, revision string, spec int32) *appsv1.ReplicaSet {
	d := traceDeployment("", image, 1)
	tmpl := d.Spec.Template
	tmpl.Labels = map[string]string{"app": "d01", "pod-template-hash": name}
	yes := true
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d01-" + name, UID: types.UID("uid-" + name), ResourceVersion: rv,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": revision,
				"deployment.kubernetes.io/desired-replicas": "4", "deployment.kubernetes.io/max-replicas": "5"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d01", UID: "d-uid", Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &spec, Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl},
	}
}

// recorded returns a Recorder that has seen events, in this arrival order.
func recorded(events ...watch.Event) *Recorder {
	r := &Recorder{Objects: true, rss: map[string]*appsv1.ReplicaSet{}, ds: map[string]*appsv1.Deployment{},
		changed: make(chan struct{})}
	for _, ev := range events {
		r.record(ev)
	}
	return r
}

// The recorder's two watches deliver a ReplicaSet the controller created
// and scaled for a new template before the Deployment's own update that
// changed the template (kube/e2e/fault, expired seeds 4 and 27 under
// load). In arrival order the new ReplicaSet looks old, scaled up; in the
// order they were stored there is nothing wrong.
func TestSnapshotsInStorageOrder(t *testing.T) {
	start := time.Now()
	events := []watch.Event{
		{Type: watch.Modified, Object: traceDeployment("10", "app:1", 1)},
		{Type: watch.Modified, Object: traceReplicaSet("old", "11", "app:1", "1", 4)},
		// Arrival order from here: the ReplicaSet watch first.
		{Type: watch.Added, Object: traceReplicaSet("new", "13", "app:2", "2", 1)},
		{Type: watch.Modified, Object: traceReplicaSet("old", "14", "app:1", "1", 3)},
		{Type: watch.Modified, Object: traceReplicaSet("new", "15", "app:2", "2", 2)},
		{Type: watch.Modified, Object: traceDeployment("12", "app:2", 2)},
		// A watch started over after 410 Gone lists what it has as ADDED.
		{Type: watch.Added, Object: traceDeployment("12", "app:2", 2)},
	}
	r := recorded(events...)
	snaps := r.Snapshots(start)["d01"]
	if len(snaps) != len(events) {
		t.Fatalf("%d snapshots, want %d", len(snaps), len(events))
	}
	var revs []string
	for i, s := range snaps {
		revs = append(revs, s.Deployment.ResourceVersion)
		if i > 0 && s.Time.Before(snaps[i-1].Time) {
			t.Errorf("snapshot %d at %v, before snapshot %d at %v", i, s.Time, i-1, snaps[i-1].Time)
		}
	}
	tr, err := planner.TraceFrom(snaps)
	if err != nil {
		t.Fatal(err)
	}
	if v := planner.Check(tr, snaps[len(snaps)-1].Deployment); len(v) != 0 {
		t.Errorf("violations in storage order: %v (Deployment versions per snapshot %v)", v, revs)
	}

	// The same events in arrival order: what the check said before.
	var stripped []watch.Event
	for _, ev := range events {
		stripped = append(stripped, watch.Event{Type: ev.Type, Object: stripRV(ev.Object)})
	}
	unordered := recorded(stripped...)
	snaps = unordered.Snapshots(start)["d01"]
	if tr, err = planner.TraceFrom(snaps); err != nil {
		t.Fatal(err)
	}
	if v := planner.Check(tr, snaps[len(snaps)-1].Deployment); len(v) == 0 {
		t.Errorf("no violation in arrival order: the test no longer shows the artefact it guards against")
	}
}

// stripRV gives obj a resourceVersion that is not a number, which leaves
// the states in arrival order.
func stripRV(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		c := o.DeepCopy()
		c.ResourceVersion = "x" + c.ResourceVersion
		return c
	case *appsv1.ReplicaSet:
		c := o.DeepCopy()
		c.ResourceVersion = "x" + c.ResourceVersion
		return c
	}
	return nil
}
