package memcluster

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCreateSetsServerFields(t *testing.T) {
	c, _ := newTestCluster(t)
	d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{}))(t)
	type meta struct {
		RV, UID         bool
		Generation      int64
		Created         metav1.Time
		Replicas        int32
		MaxSurge        string
		RevisionHistory int32
		Deadline        int32
		Grace           int64
		Restart         corev1.RestartPolicy
	}
	got := meta{
		RV: d.ResourceVersion != "", UID: d.UID != "", Generation: d.Generation, Created: d.CreationTimestamp,
		Replicas: *d.Spec.Replicas, MaxSurge: d.Spec.Strategy.RollingUpdate.MaxSurge.String(),
		RevisionHistory: *d.Spec.RevisionHistoryLimit, Deadline: *d.Spec.ProgressDeadlineSeconds,
		Grace: *d.Spec.Template.Spec.TerminationGracePeriodSeconds, Restart: d.Spec.Template.Spec.RestartPolicy,
	}
	want := meta{RV: true, UID: true, Generation: 1, Created: metav1.NewTime(t0), Replicas: 1, MaxSurge: "25%",
		RevisionHistory: 10, Deadline: 600, Grace: 30, Restart: corev1.RestartPolicyAlways}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Create() mismatch (-want +got):\n%s", diff)
	}
	if _, err := c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second Create() error = %v; want AlreadyExists", err)
	}
	if _, err := c.Deployments("other").Get(ctxT(t), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get() in another namespace error = %v; want NotFound", err)
	}
}

func TestGenerateName(t *testing.T) {
	names := func(seed uint64) []string {
		c := New(Config{Seed: seed})
		var out []string
		for range 3 {
			p := pod("", "", "")
			p.GenerateName = "web-"
			out = append(out, must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t).Name)
		}
		return out
	}
	a, b := names(7), names(7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("generated names differ for one seed (-first +second):\n%s", diff)
	}
	for _, n := range a {
		if len(n) != len("web-")+5 {
			t.Errorf("generated name %q; want web- and 5 characters", n)
		}
	}
	c, _ := newTestCluster(t)
	if _, err := c.Pods("ns").Create(ctxT(t), pod("", "", ""), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("Create() without a name error = %v; want Invalid", err)
	}
}

func TestUpdateResourceVersion(t *testing.T) {
	c, _ := newTestCluster(t)
	rs := c.ReplicaSets("ns")
	created := must(rs.Create(ctxT(t), replicaSet("web", nil), metav1.CreateOptions{}))(t)
	tests := []struct {
		name    string
		rv      string
		uid     string
		wantErr func(error) bool
	}{
		{name: "current rv", rv: created.ResourceVersion},
		{name: "stale rv", rv: "1", wantErr: apierrors.IsConflict},
		{name: "empty rv is unconditional"},
		{name: "other uid", uid: "someone-else", wantErr: apierrors.IsConflict},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := must(rs.Get(ctxT(t), "web", metav1.GetOptions{}))(t)
			cur.ResourceVersion = tt.rv
			if tt.uid != "" {
				cur.UID = "someone-else"
			}
			cur.Spec.Replicas = ptrTo(int32(10 + i))
			_, err := rs.Update(ctxT(t), cur, metav1.UpdateOptions{})
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Update() error = %v; want nil", err)
			}
			if tt.wantErr != nil && !tt.wantErr(err) {
				t.Fatalf("Update() error = %v; want a Conflict", err)
			}
		})
	}
}

func TestGeneration(t *testing.T) {
	c, _ := newTestCluster(t)
	ds := c.Deployments("ns")
	tests := []struct {
		name   string
		mutate func(d *appsv1.Deployment)
		want   int64
	}{
		{name: "label change keeps generation", mutate: func(d *appsv1.Deployment) { d.Labels = map[string]string{"x": "y"} }, want: 1},
		{name: "spec change bumps", mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo(int32(3)) }, want: 2},
		{name: "annotation change bumps (deployments only)", mutate: func(d *appsv1.Deployment) { d.Annotations = map[string]string{"a": "b"} }, want: 3},
		{name: "status change via Update is ignored", mutate: func(d *appsv1.Deployment) { d.Status.Replicas = 9 }, want: 3},
		{name: "no-op", mutate: func(*appsv1.Deployment) {}, want: 3},
	}
	must(ds.Create(ctxT(t), deployment("web"), metav1.CreateOptions{}))(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := must(ds.Get(ctxT(t), "web", metav1.GetOptions{}))(t)
			tt.mutate(d)
			got := must(ds.Update(ctxT(t), d, metav1.UpdateOptions{}))(t)
			if got.Generation != tt.want {
				t.Errorf("Generation = %d; want %d", got.Generation, tt.want)
			}
			if got.Status.Replicas != 0 {
				t.Errorf("Update() wrote status.replicas = %d", got.Status.Replicas)
			}
		})
	}
}

func TestNoOpUpdateKeepsResourceVersion(t *testing.T) {
	c, _ := newTestCluster(t)
	created := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{}))(t)
	got := must(c.Deployments("ns").Update(ctxT(t), created.DeepCopy(), metav1.UpdateOptions{}))(t)
	if got.ResourceVersion != created.ResourceVersion {
		t.Errorf("no-op Update() rv = %s; want %s", got.ResourceVersion, created.ResourceVersion)
	}
}

func TestUpdateStatusIsolation(t *testing.T) {
	c, _ := newTestCluster(t)
	ds := c.Deployments("ns")
	d := must(ds.Create(ctxT(t), deployment("web"), metav1.CreateOptions{}))(t)
	d.Status.ObservedGeneration = 1
	d.Status.Replicas = 1
	d.Spec.Replicas = ptrTo(int32(5))
	d.Labels = map[string]string{"sneaky": "yes"}
	// Like deployments/status on kube-apiserver, annotations go through
	// (the controller writes the revision this way) without a generation bump.
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	got := must(ds.UpdateStatus(ctxT(t), d, metav1.UpdateOptions{}))(t)
	if diff := cmp.Diff(d.Annotations, got.Annotations); diff != "" {
		t.Errorf("UpdateStatus() annotations mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1}, got.Status); diff != "" {
		t.Errorf("UpdateStatus() status mismatch (-want +got):\n%s", diff)
	}
	if *got.Spec.Replicas != 1 || got.Labels != nil || got.Generation != 1 {
		t.Errorf("UpdateStatus() changed spec/metadata: replicas=%d labels=%v generation=%d", *got.Spec.Replicas, got.Labels, got.Generation)
	}
	d.ResourceVersion = "1"
	if _, err := ds.UpdateStatus(ctxT(t), d, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("UpdateStatus() with a stale rv error = %v; want Conflict", err)
	}
}

func TestListSortedAndFiltered(t *testing.T) {
	c, _ := newTestCluster(t)
	for _, ns := range []string{"b", "a"} {
		for _, name := range []string{"y", "x"} {
			p := pod(name, "", "")
			p.Namespace = ns
			if name == "x" {
				p.Labels = map[string]string{"app": "other"}
			}
			must(c.Pods(ns).Create(ctxT(t), p, metav1.CreateOptions{}))(t)
		}
	}
	tests := []struct {
		name string
		ns   string
		opts metav1.ListOptions
		want []string
	}{
		{name: "all", want: []string{"a/x", "a/y", "b/x", "b/y"}},
		{name: "namespace", ns: "b", want: []string{"b/x", "b/y"}},
		{name: "labels", opts: metav1.ListOptions{LabelSelector: "app=web"}, want: []string{"a/y", "b/y"}},
		{name: "fields", opts: metav1.ListOptions{FieldSelector: "metadata.name=x"}, want: []string{"a/x", "b/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, rv, err := c.Pods(tt.ns).List(ctxT(t), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range items {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("List() mismatch (-want +got):\n%s", diff)
			}
			if rv != c.ResourceVersion() {
				t.Errorf("List() rv = %s; want %s", rv, c.ResourceVersion())
			}
		})
	}
}

func TestReturnedObjectsAreCopies(t *testing.T) {
	c, _ := newTestCluster(t)
	p := must(c.Pods("ns").Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
	p.Labels["app"] = "mutated"
	got := must(c.Pods("ns").Get(ctxT(t), "a", metav1.GetOptions{}))(t)
	if got.Labels["app"] != "web" {
		t.Errorf("stored label = %q after mutating a returned copy; want web", got.Labels["app"])
	}
}

// TestStatusWriteSharesNothingWithCallers: a status write stores a version
// that shares its unchanged parts with the previous one; neither the
// caller's input, nor the returned object, nor a later write may reach
// either stored version.
func TestStatusWriteSharesNothingWithCallers(t *testing.T) {
	c, _ := newTestCluster(t)
	pods := c.Pods("ns")
	must(pods.Create(ctxT(t), pod("before", "", ""), metav1.CreateOptions{}))(t) // so that v1's rv - 1 is not "0"
	v1 := must(pods.Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
	in := v1.DeepCopy()
	in.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	in.Labels["app"] = "relabelled" // pods/status keeps labels
	v2 := must(pods.UpdateStatus(ctxT(t), in, metav1.UpdateOptions{}))(t)

	// Mutate everything the callers hold.
	in.Status.Conditions[0].Status = corev1.ConditionFalse
	in.Labels["app"] = "input"
	v2.Status.Conditions[0].Reason = "returned"
	v2.Labels["app"] = "returned"
	v2.Spec.Containers[0].Image = "returned"
	v1.Spec.Containers[0].Image = "first"

	got := must(pods.Get(ctxT(t), "a", metav1.GetOptions{}))(t)
	if want := (corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}); len(got.Status.Conditions) != 1 || got.Status.Conditions[0] != want {
		t.Errorf("stored conditions = %+v; want [%+v]", got.Status.Conditions, want)
	}
	if got.Labels["app"] != "relabelled" || got.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("stored label %q, image %q; want relabelled, nginx:1.27", got.Labels["app"], got.Spec.Containers[0].Image)
	}
	// The previous version, as a watch from before the create replays it.
	rv, _ := strconv.Atoi(v1.ResourceVersion)
	w := must(pods.Watch(ctxT(t), metav1.ListOptions{ResourceVersion: strconv.Itoa(rv - 1)}))(t)
	defer w.Stop()
	first := (<-w.ResultChan()).Object.(*corev1.Pod)
	if first.ResourceVersion != v1.ResourceVersion || first.Labels["app"] != "web" || len(first.Status.Conditions) != 0 || first.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("replayed first version: rv %s labels %v conditions %v image %q; want it as created",
			first.ResourceVersion, first.Labels, first.Status.Conditions, first.Spec.Containers[0].Image)
	}
}
