package memcluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Every test of the package computes managedFields both ways: the cheap
// road of managedfields_fast.go panics where it differs from the field
// manager's.
func init() { checkManagedFields = true }

func TestUntrackedManagers(t *testing.T) {
	c := newTrackedCluster(t, Config{UntrackedManagers: []string{controllerManager}})
	ctl := ControllerClient{Cluster: c}
	d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{FieldManager: "user"}))(t)
	created := managersOf(d.ManagedFields)
	if diff := cmp.Diff([]string{"user/Update/"}, created); diff != "" {
		t.Fatalf("a tracked create (-want +got):\n%s", diff)
	}
	// An untracked status write keeps the entries as they were.
	d.Status.ObservedGeneration = 1
	d.Status.Replicas = 2
	d = must(ctl.UpdateDeploymentStatus(ctxT(t), d))(t)
	if d.Status.Replicas != 2 || !semanticEqual(d.ManagedFields, must(c.Deployments("ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t).ManagedFields) {
		t.Fatalf("status %+v", d.Status)
	}
	if diff := cmp.Diff(created, managersOf(d.ManagedFields)); diff != "" {
		t.Errorf("after an untracked status write (-want +got):\n%s", diff)
	}
	// An object it creates has none, and so stays without through a
	// tracked update, as kube-apiserver keeps an object without them.
	rs := must(ctl.CreateReplicaSet(ctxT(t), replicaSet("web-1", d)))(t)
	if len(rs.ManagedFields) != 0 {
		t.Errorf("an untracked create recorded %v", managersOf(rs.ManagedFields))
	}
	rs.Labels = map[string]string{"x": "y"}
	rs = must(c.ReplicaSets("ns").Update(ctxT(t), rs, metav1.UpdateOptions{FieldManager: "user"}))(t)
	if len(rs.ManagedFields) != 0 {
		t.Errorf("an update of an object without managedFields recorded %v", managersOf(rs.ManagedFields))
	}
	// A tracked status write of the same deployment is recorded.
	d.Status.Replicas = 3
	d = must(c.Deployments("ns").UpdateStatus(ctxT(t), d, metav1.UpdateOptions{FieldManager: "other"}))(t)
	if diff := cmp.Diff([]string{"other/Update/status", "user/Update/"}, managersOf(d.ManagedFields)); diff != "" {
		t.Errorf("after a tracked status write (-want +got):\n%s", diff)
	}
}

// TestCheapRoadIsTaken: creates and status writes are recorded the cheap
// way (their parsed sets cached with the stored entries), an update that
// sends managedFields of its own and an apply by the field manager.
func TestCheapRoadIsTaken(t *testing.T) {
	c := newTrackedCluster(t, Config{})
	r := c.deployments
	cached := func(what string, want bool) {
		t.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		stored := r.objs[types.NamespacedName{Namespace: "ns", Name: "web"}]
		d, ok := r.decoded[objectKey(stored)]
		if got := ok && sameSlice(d.entries, stored.ManagedFields); got != want {
			t.Errorf("%s: recorded the cheap way %v; want %v", what, got, want)
		}
	}
	d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{FieldManager: "user"}))(t)
	cached("create", true)
	d.Status.Replicas = 2
	d = must(c.Deployments("ns").UpdateStatus(ctxT(t), d, metav1.UpdateOptions{FieldManager: "ctl"}))(t)
	cached("status write", true)
	d.Labels = map[string]string{"x": "1"}
	d = must(c.Deployments("ns").Update(ctxT(t), d, metav1.UpdateOptions{FieldManager: "user"}))(t)
	cached("update", true)
	d.ManagedFields = d.ManagedFields[:1]
	d.Labels["x"] = "2"
	d = must(c.Deployments("ns").Update(ctxT(t), d, metav1.UpdateOptions{FieldManager: "user"}))(t)
	cached("update with its own managedFields", false)
	// The list sent (ctl's entry alone) replaced the record: user's entry
	// has the labels it changed, not the spec it created.
	if got := fieldsOf(d.ManagedFields); len(got) != 2 || !strings.HasPrefix(got[1], "user/Update: ") || strings.Contains(got[1], "f:spec") {
		t.Errorf("the update's own list was not taken: %v", got)
	}
}
