package memcluster

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

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

func TestManagedFieldsDiff(t *testing.T) {
	at := func(loc *time.Location) *metav1.Time {
		return &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).In(loc)}
	}
	entry := func(manager string, tm *metav1.Time, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
			Time: tm, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	same := []metav1.ManagedFieldsEntry{entry("a", at(time.UTC), `{"f:spec":{}}`)}
	sameElsewhere := []metav1.ManagedFieldsEntry{entry("a", at(time.FixedZone("x", 3600)), `{"f:spec":{}}`)}
	if diff := managedFieldsDiff(gvk, "a", same, sameElsewhere); diff != "" {
		t.Errorf("one instant in two locations: %s", diff)
	}
	for name, other := range map[string][]metav1.ManagedFieldsEntry{
		"fields":  {entry("a", at(time.UTC), `{"f:status":{}}`)},
		"time":    {entry("a", &metav1.Time{Time: at(time.UTC).Add(time.Second)}, `{"f:spec":{}}`)},
		"no time": {entry("a", nil, `{"f:spec":{}}`)},
		"manager": {entry("b", at(time.UTC), `{"f:spec":{}}`)},
		"more":    {same[0], entry("b", at(time.UTC), `{"f:spec":{}}`)},
	} {
		diff := managedFieldsDiff(gvk, "a", same, other)
		if !strings.Contains(diff, `of apps/v1, Kind=Deployment by "a" differ`) || !strings.Contains(diff, "field manager:") {
			t.Errorf("%s: %q", name, diff)
		}
	}
}
