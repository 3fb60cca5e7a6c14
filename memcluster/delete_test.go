package memcluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
