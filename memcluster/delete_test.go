package memcluster

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
)

func TestDeletePod(t *testing.T) {
	grace := func(s int64) *int64 { return &s }
	tests := []struct {
		name      string
		nodeName  string
		opts      metav1.DeleteOptions
		wantGone  bool
		wantGrace int64
	}{
		{name: "unscheduled pod goes at once", wantGone: true},
		{name: "scheduled pod lingers for the spec grace", nodeName: "node-0", wantGrace: 30},
		{name: "requested grace wins", nodeName: "node-0", opts: metav1.DeleteOptions{GracePeriodSeconds: grace(5)}, wantGrace: 5},
		{name: "zero grace goes at once", nodeName: "node-0", opts: metav1.DeleteOptions{GracePeriodSeconds: grace(0)}, wantGone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fc := newTestCluster(t)
			fc.Step(10 * time.Second)
			p := pod("p", "", "")
			p.Spec.NodeName = tt.nodeName
			must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
			if err := c.Pods("ns").Delete(ctxT(t), "p", tt.opts); err != nil {
				t.Fatal(err)
			}
			got, err := c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{})
			if tt.wantGone {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("Get() after Delete() error = %v; want NotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantTS := metav1.NewTime(t0.Add(10*time.Second + time.Duration(tt.wantGrace)*time.Second))
			if got.DeletionTimestamp == nil || !got.DeletionTimestamp.Equal(&wantTS) || *got.DeletionGracePeriodSeconds != tt.wantGrace {
				t.Errorf("deletionTimestamp=%v grace=%v; want %v and %d", got.DeletionTimestamp, got.DeletionGracePeriodSeconds, wantTS, tt.wantGrace)
			}
			if got.Generation != 2 {
				t.Errorf("Generation = %d; want 2 (bumped by graceful deletion)", got.Generation)
			}
			// The kubelet's confirmation: a zero grace period.
			if err := c.Pods("ns").Delete(ctxT(t), "p", metav1.DeleteOptions{GracePeriodSeconds: grace(0)}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("Get() after confirmation error = %v; want NotFound", err)
			}
		})
	}
}

func TestDeletePreconditions(t *testing.T) {
	c, _ := newTestCluster(t)
	p := must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	other, stale := types.UID("other"), "999"
	for _, pre := range []metav1.Preconditions{{UID: &other}, {ResourceVersion: &stale}} {
		if err := c.Pods("ns").Delete(ctxT(t), "p", metav1.DeleteOptions{Preconditions: &pre}); !apierrors.IsConflict(err) {
			t.Errorf("Delete() with precondition %+v error = %v; want Conflict", pre, err)
		}
	}
	if err := c.Pods("ns").Delete(ctxT(t), "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}); err != nil {
		t.Errorf("Delete() with the right uid: %v", err)
	}
	if err := c.Pods("ns").Delete(ctxT(t), "p", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second Delete() error = %v; want NotFound", err)
	}
}

func TestFinalizers(t *testing.T) {
	c, _ := newTestCluster(t)
	rs := replicaSet("web", nil)
	rs.Finalizers = []string{"example.com/hold"}
	must(c.ReplicaSets("ns").Create(ctxT(t), rs, metav1.CreateOptions{}))(t)
	if err := c.ReplicaSets("ns").Delete(ctxT(t), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := must(c.ReplicaSets("ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
	if got.DeletionTimestamp == nil {
		t.Fatal("deletionTimestamp not set on an object with finalizers")
	}
	got.Finalizers = append(got.Finalizers, "example.com/late")
	if _, err := c.ReplicaSets("ns").Update(ctxT(t), got.DeepCopy(), metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("adding a finalizer while deleting: error = %v; want Invalid", err)
	}
	got.Finalizers = nil
	if _, err := c.ReplicaSets("ns").Update(ctxT(t), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReplicaSets("ns").Get(ctxT(t), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get() after the last finalizer went: %v; want NotFound", err)
	}
}

// world lists what is stored, as "kind/name" plus " (deleting)" or the
// owner names.
func world(t *testing.T, c *Cluster) []string {
	t.Helper()
	var out []string
	add := func(kind string, m metav1.Object) {
		s := kind + "/" + m.GetName()
		for _, r := range m.GetOwnerReferences() {
			s += " <" + r.Name
		}
		if m.GetDeletionTimestamp() != nil {
			s += " (deleting)"
		}
		out = append(out, s)
	}
	ds, _, _ := c.Deployments("").List(ctxT(t), metav1.ListOptions{})
	for _, d := range ds {
		add("deploy", d)
	}
	rss, _, _ := c.ReplicaSets("").List(ctxT(t), metav1.ListOptions{})
	for _, rs := range rss {
		add("rs", rs)
	}
	pods, _, _ := c.Pods("").List(ctxT(t), metav1.ListOptions{})
	for _, p := range pods {
		add("pod", p)
	}
	return out
}

func TestGarbageCollection(t *testing.T) {
	orphan, foreground := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground
	yes := true
	tests := []struct {
		name string
		opts metav1.DeleteOptions
		want []string
		// wantConfirmed is the world once the kubelet has confirmed the
		// bound pod's deletion.
		wantConfirmed []string
	}{
		{
			name: "background cascades; bound pods linger",
			want: []string{"pod/bound <web (deleting)"},
		},
		{
			name:          "foreground: the owners wait for their blocking dependents",
			opts:          metav1.DeleteOptions{PropagationPolicy: &foreground},
			want:          []string{"deploy/web (deleting)", "rs/web <web (deleting)", "pod/bound <web (deleting)"},
			wantConfirmed: []string{},
		},
		{
			name: "orphan removes owner references",
			opts: metav1.DeleteOptions{PropagationPolicy: &orphan},
			want: []string{"rs/web", "pod/bound <web", "pod/pending <web"},
		},
		{
			name: "the legacy orphanDependents",
			opts: metav1.DeleteOptions{OrphanDependents: &yes},
			want: []string{"rs/web", "pod/bound <web", "pod/pending <web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCluster(t)
			d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{}))(t)
			rs := must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("web", d), metav1.CreateOptions{}))(t)
			bound := pod("bound", "web", rs.UID)
			bound.Spec.NodeName = "node-0"
			must(c.Pods("ns").Create(ctxT(t), bound, metav1.CreateOptions{}))(t)
			must(c.Pods("ns").Create(ctxT(t), pod("pending", "web", rs.UID), metav1.CreateOptions{}))(t)
			if err := c.Deployments("ns").Delete(ctxT(t), "web", tt.opts); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, world(t, c)); diff != "" {
				t.Errorf("world after Delete() mismatch (-want +got):\n%s", diff)
			}
			if tt.wantConfirmed == nil {
				return
			}
			zero := int64(0)
			if err := c.Pods("ns").Delete(ctxT(t), "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantConfirmed, world(t, c), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("world after the kubelet's confirmation mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateWithDanglingOwnerIsCollected(t *testing.T) {
	c, _ := newTestCluster(t)
	must(c.Pods("ns").Create(ctxT(t), pod("orphan", "gone", "no-such-uid"), metav1.CreateOptions{}))(t)
	foreign := pod("foreign", "", "")
	foreign.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "w-uid"}}
	must(c.Pods("ns").Create(ctxT(t), foreign, metav1.CreateOptions{}))(t)
	if diff := cmp.Diff([]string{"pod/foreign <w"}, world(t, c)); diff != "" {
		t.Errorf("world mismatch (-want +got):\n%s", diff)
	}
}

func TestForegroundDeletion(t *testing.T) {
	foreground := metav1.DeletePropagationForeground
	no := false
	t.Run("a non-blocking dependent does not hold its owner", func(t *testing.T) {
		c, _ := newTestCluster(t)
		rs := must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("web", nil), metav1.CreateOptions{}))(t)
		p := pod("bound", "web", rs.UID)
		p.Spec.NodeName = "node-0"
		p.OwnerReferences[0].BlockOwnerDeletion = &no
		must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
		if err := c.ReplicaSets("ns").Delete(ctxT(t), "web", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"pod/bound <web (deleting)"}, world(t, c)); diff != "" {
			t.Errorf("world mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("REST: the answer is the owner, waiting", func(t *testing.T) {
		c, _ := newTestCluster(t)
		must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{}))(t)
		resp, body := newRESTClient(t, c).do(req{method: "DELETE", path: "/apis/apps/v1/namespaces/ns/deployments/web",
			body: `{"propagationPolicy":"Foreground"}`})
		var d struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(body, &d); err != nil || resp.StatusCode != 200 || d.Metadata.DeletionTimestamp == nil ||
			!cmp.Equal(d.Metadata.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
			t.Errorf("DELETE with Foreground = %d %s; want 200 and the deployment with the foregroundDeletion finalizer", resp.StatusCode, body)
		}
		// Nothing depends on it: the collector lets it go at once.
		if _, err := c.Deployments("ns").Get(ctxT(t), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Get after the collector: %v; want NotFound", err)
		}
	})
	t.Run("a second delete changes the policy of an object held by a finalizer", func(t *testing.T) {
		c, _ := newTestCluster(t)
		rs := replicaSet("web", nil)
		rs.Finalizers = []string{"example.com/hold"}
		rs = must(c.ReplicaSets("ns").Create(ctxT(t), rs, metav1.CreateOptions{}))(t)
		p := pod("bound", "web", rs.UID)
		p.Spec.NodeName = "node-0"
		must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
		if err := c.ReplicaSets("ns").Delete(ctxT(t), "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Background: the owner waits for its finalizer, the pod for its owner.
		if diff := cmp.Diff([]string{"rs/web (deleting)", "pod/bound <web"}, world(t, c)); diff != "" {
			t.Errorf("world after a background delete mismatch (-want +got):\n%s", diff)
		}
		if err := c.ReplicaSets("ns").Delete(ctxT(t), "web", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
			t.Fatal(err)
		}
		got := must(c.ReplicaSets("ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
		if !cmp.Equal(got.Finalizers, []string{"example.com/hold", metav1.FinalizerDeleteDependents}) || got.Generation != 2 {
			t.Errorf("replica set = finalizers %v, generation %d; want the hold and foregroundDeletion, generation 2", got.Finalizers, got.Generation)
		}
		if diff := cmp.Diff([]string{"rs/web (deleting)", "pod/bound <web (deleting)"}, world(t, c)); diff != "" {
			t.Errorf("world after the foreground delete mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestPropagationWithoutCollector(t *testing.T) {
	orphan, foreground := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground
	for _, tt := range []struct {
		policy metav1.DeletionPropagation
		want   string
	}{{orphan, metav1.FinalizerOrphanDependents}, {foreground, metav1.FinalizerDeleteDependents}} {
		c := New(Config{Clock: clock.NewFake(t0), Seed: 1, NoGarbageCollection: true})
		d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{}))(t)
		must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("web", d), metav1.CreateOptions{}))(t)
		if err := c.Deployments("ns").Delete(ctxT(t), "web", metav1.DeleteOptions{PropagationPolicy: &tt.policy}); err != nil {
			t.Fatal(err)
		}
		got := must(c.Deployments("ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
		if !cmp.Equal(got.Finalizers, []string{tt.want}) || got.DeletionTimestamp == nil {
			t.Errorf("%s without a collector: finalizers %v; want [%s], as envtest keeps them", tt.policy, got.Finalizers, tt.want)
		}
	}
}

func TestDeleteOptionsValidation(t *testing.T) {
	c, _ := newTestCluster(t)
	p := must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	yes, bg, bad := true, metav1.DeletePropagationBackground, metav1.DeletionPropagation("Sideways")
	other := types.UID("other")
	tests := []struct {
		opts metav1.DeleteOptions
		want string
	}{
		{metav1.DeleteOptions{OrphanDependents: &yes, PropagationPolicy: &bg}, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Background": orphanDependents and deletionPropagation cannot be both set`},
		{metav1.DeleteOptions{PropagationPolicy: &bad}, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"`},
		{metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}}, `Operation cannot be fulfilled on Pod "p": the UID in the precondition (other) does not match the UID in record (` + string(p.UID) + `). The object might have been deleted and then recreated`},
	}
	for _, tt := range tests {
		err := c.Pods("ns").Delete(ctxT(t), "p", tt.opts)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Delete(%+v) = %v; want %s", tt.opts, err, tt.want)
		}
	}
}

func TestCollectorDropsDanglingReferences(t *testing.T) {
	c, _ := newTestCluster(t)
	a := must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("a", nil), metav1.CreateOptions{}))(t)
	b := must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("b", nil), metav1.CreateOptions{}))(t)
	p := pod("p", "a", a.UID)
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "b", UID: b.UID})
	must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
	if err := c.ReplicaSets("ns").Delete(ctxT(t), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"rs/b", "pod/p <b"}, world(t, c)); diff != "" {
		t.Errorf("world mismatch (-want +got):\n%s", diff)
	}
	// An owner of the same name in another namespace is no owner.
	q := podIn("elsewhere", "q")
	q.OwnerReferences = []metav1.OwnerReference{ownerRef("ReplicaSet", "b", b.UID)}
	must(c.Pods("elsewhere").Create(ctxT(t), q, metav1.CreateOptions{}))(t)
	if _, err := c.Pods("elsewhere").Get(ctxT(t), "q", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a pod whose owner is in another namespace: %v; want collected", err)
	}
}

func TestDefaultPropagationOfJobsAndEvents(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	s := runtime.NewScheme()
	if err := batchv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	jobs := NewResource(c, must(KindFor(s, &batchv1.Job{}, KindOptions{}))(t)).Namespace("ns")
	job := must(jobs.Create(ctxT(t), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}}, metav1.CreateOptions{}))(t)
	p := pod("p", "", "")
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: job.UID}}
	must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
	if err := jobs.Delete(ctxT(t), "j", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// batch/v1 Jobs orphan by default, as kube-apiserver's registry says.
	if diff := cmp.Diff([]string{"pod/p"}, world(t, c)); diff != "" {
		t.Errorf("world after deleting a job mismatch (-want +got):\n%s", diff)
	}
	events := kindClient[*corev1.Event](c, schema.GroupKind{Kind: "Event"}, "ns")
	must(events.Create(ctxT(t), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, InvolvedObject: corev1.ObjectReference{Namespace: "ns"}}, metav1.CreateOptions{}))(t)
	fg := metav1.DeletePropagationForeground
	if err := events.Delete(ctxT(t), "e", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	if _, err := events.Get(ctxT(t), "e", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an event deleted in the foreground: %v; want gone (events take no propagation finalizer)", err)
	}
}
