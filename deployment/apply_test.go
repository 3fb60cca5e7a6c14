package deployment_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// rolloutPlan returns a world with a settled v1 Deployment of 10 whose
// template was just changed to v2, and the plan of the next sync: create
// the new ReplicaSet, scale the old one down, write the status.
func rolloutPlan(t *testing.T) (*world, types.NamespacedName, deployment.Plan) {
	t.Helper()
	h := newHarness(t, newDeployment(10, "web:v1"))
	h.converge(10)
	h.w.edit(h.key, setImage("web:v2"))
	p, err := deployment.Sync(h.state(), h.w.now)
	if err != nil {
		t.Fatal(err)
	}
	return h.w, h.key, p
}

func TestApplyOrderAndStatusLast(t *testing.T) {
	w, _, p := rolloutPlan(t)
	w.writes, w.events = nil, nil
	n, err := deployment.Apply(context.Background(), w, w, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(p.Actions) + 1; n != want {
		t.Errorf("Apply() = %d; want %d", n, want)
	}
	want := []string{"create web-5fd4fd6f8c", "update web-6bff6466bb", "update-status web"}
	if diff := cmp.Diff(want, w.writes); diff != "" {
		t.Errorf("writes mismatch (-want +got):\n%s", diff)
	}
	wantEvents := []string{
		"Normal ScalingReplicaSet Scaled up replica set web-5fd4fd6f8c from 0 to 3",
		"Normal ScalingReplicaSet Scaled down replica set web-6bff6466bb from 10 to 8",
	}
	if diff := cmp.Diff(wantEvents, w.events); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestApplyPartial(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		failVerb   string
		wantN      int
		wantWrites []string
		wantEvents int
	}{
		{name: "create fails", failVerb: "create", wantN: 0, wantWrites: []string{"update-status web"}, wantEvents: 1},
		{name: "scale fails", failVerb: "update", wantN: 2, wantWrites: []string{"create web-5fd4fd6f8c"}, wantEvents: 1},
		{name: "status fails", failVerb: "update-status", wantN: 4, wantWrites: []string{"create web-5fd4fd6f8c", "update web-6bff6466bb"}, wantEvents: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _, p := rolloutPlan(t)
			w.writes, w.events = nil, nil
			w.fail = func(verb string, _ types.NamespacedName) error {
				if verb == tt.failVerb {
					return boom
				}
				return nil
			}
			n, err := deployment.Apply(context.Background(), w, w, p)
			if !errors.Is(err, boom) {
				t.Fatalf("Apply() error = %v; want boom", err)
			}
			if n != tt.wantN {
				t.Errorf("Apply() = %d; want %d", n, tt.wantN)
			}
			if diff := cmp.Diff(tt.wantWrites, w.writes); diff != "" {
				t.Errorf("writes mismatch (-want +got):\n%s", diff)
			}
			if len(w.events) != tt.wantEvents {
				t.Errorf("events = %q; want %d", w.events, tt.wantEvents)
			}
		})
	}
}

// A failed create records the warning event and Progressing=False with the
// error, as upstream.
func TestApplyCreateFailureCondition(t *testing.T) {
	w, key, p := rolloutPlan(t)
	w.fail = func(verb string, _ types.NamespacedName) error {
		if verb == "create" {
			return apierrors.NewForbidden(rsResource, "x", errors.New("quota exceeded"))
		}
		return nil
	}
	if _, err := deployment.Apply(context.Background(), w, w, p); !apierrors.IsForbidden(err) {
		t.Fatalf("Apply() error = %v; want Forbidden", err)
	}
	d, _ := w.Get(key)
	c := rollout.GetCondition(d.Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != rollout.ReasonFailedRSCreate || !strings.Contains(c.Message, "quota exceeded") {
		t.Errorf("Progressing = %+v; want ReplicaSetCreateError mentioning the error", c)
	}
	if len(w.events) == 0 || !strings.Contains(w.events[len(w.events)-1], "Warning ReplicaSetCreateError Failed to create new replica set") {
		t.Errorf("events = %q; want a ReplicaSetCreateError warning", w.events)
	}
}

func TestApplyErrorClasses(t *testing.T) {
	t.Run("stale snapshot conflicts", func(t *testing.T) {
		w, key, p := rolloutPlan(t)
		w.edit(key, func(*appsv1.Deployment) {}) // any write bumps the resourceVersion
		w.mu.Lock()
		for _, rs := range w.rss {
			rs.ResourceVersion += "0"
		}
		w.mu.Unlock()
		n, err := deployment.Apply(context.Background(), w, nil, p)
		if !apierrors.IsConflict(err) || errors.Is(err, deployment.ErrTerminal) {
			t.Fatalf("Apply() error = %v; want a retriable Conflict", err)
		}
		if n != 2 {
			t.Errorf("Apply() = %d; want 2 (create and its event)", n)
		}
	})
	t.Run("terminating namespace is terminal", func(t *testing.T) {
		w, _, p := rolloutPlan(t)
		w.fail = func(verb string, _ types.NamespacedName) error {
			if verb != "create" {
				return nil
			}
			err := apierrors.NewForbidden(rsResource, "x", errors.New("namespace is terminating"))
			err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
			return err
		}
		w.events = nil
		_, err := deployment.Apply(context.Background(), w, w, p)
		if !errors.Is(err, deployment.ErrTerminal) {
			t.Fatalf("Apply() error = %v; want terminal", err)
		}
		if len(w.events) != 0 {
			t.Errorf("events = %q; want none", w.events)
		}
	})
	t.Run("our own ReplicaSet already exists", func(t *testing.T) {
		w, _, p := rolloutPlan(t)
		create := p.Actions[0].(deployment.CreateReplicaSet)
		if _, err := w.CreateReplicaSet(context.Background(), create.ReplicaSet); err != nil {
			t.Fatal(err)
		}
		w.events = nil
		if _, err := deployment.Apply(context.Background(), w, w, p); err != nil {
			t.Fatalf("Apply() error = %v; want nil", err)
		}
		want := []string{"Normal ScalingReplicaSet Scaled down replica set web-6bff6466bb from 10 to 8"}
		if diff := cmp.Diff(want, w.events); diff != "" {
			t.Errorf("events mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("someone else's ReplicaSet already exists", func(t *testing.T) {
		w, _, p := rolloutPlan(t)
		create := p.Actions[0].(deployment.CreateReplicaSet)
		other := create.ReplicaSet.DeepCopy()
		other.OwnerReferences = nil
		other.Spec.Template.Spec.Containers[0].Image = "other"
		w.addReplicaSet(other)
		if _, err := deployment.Apply(context.Background(), w, w, p); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("Apply() error = %v; want AlreadyExists", err)
		}
	})
}

// A rollback that also creates the new ReplicaSet writes the Deployment
// twice (spec, then status); the status write must use the
// resourceVersion the first write returned.
func TestApplyRollbackThenStatus(t *testing.T) {
	h := newHarness(t, newDeployment(2, "web:v1"))
	h.converge(10)
	h.w.edit(h.key, func(d *appsv1.Deployment) {
		setImage("web:v2")(d)
		setRollbackTo("1")(d)
	})
	p, err := deployment.Sync(h.state(), h.w.now)
	if err != nil {
		t.Fatal(err)
	}
	if p.UpdateStatus == nil {
		t.Fatalf("plan has no status write:\n%s", p)
	}
	if _, err := deployment.Apply(context.Background(), h.w, h.w, p); err != nil {
		t.Fatalf("Apply() error = %v\nplan:\n%s", err, p)
	}
	d, _ := h.w.Get(h.key)
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "web:v1" {
		t.Errorf("image = %s; want web:v1", img)
	}
	if _, ok := d.Annotations[rollout.RollbackToAnnotation]; ok {
		t.Error("rollback annotation not cleared")
	}
	if c := rollout.GetCondition(d.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != rollout.ReasonNewReplicaSetCreated {
		t.Errorf("Progressing = %+v; want NewReplicaSetCreated", c)
	}
}

func TestReconciler(t *testing.T) {
	newReconciler := func(w *world) *deployment.Reconciler {
		return &deployment.Reconciler{Deployments: w, ReplicaSets: w, Pods: w, Client: w, Events: w, Clock: clock.NewFake(t0)}
	}
	t.Run("not found", func(t *testing.T) {
		w := newWorld()
		res, err := newReconciler(w).Reconcile(context.Background(), types.NamespacedName{Namespace: "ns", Name: "gone"})
		if err != nil || res != (deployment.Result{}) {
			t.Errorf("Reconcile() = %v, %v; want zero, nil", res, err)
		}
	})
	t.Run("converges and requeues for the deadline", func(t *testing.T) {
		w := newWorld()
		d := newDeployment(2, "web:v1")
		d.Spec.ProgressDeadlineSeconds = ptr(int32(30))
		key := deployment.KeyOf(w.addDeployment(d))
		r := newReconciler(w)
		w.unhealthyImage = "web:v1"
		var res deployment.Result
		for i := 0; i < 5; i++ {
			var err error
			if res, err = r.Reconcile(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			w.settle()
		}
		if res.RequeueAfter <= 0 {
			t.Errorf("RequeueAfter = %v; want > 0 while stuck", res.RequeueAfter)
		}
	})
	adoptWorld := func() (*world, types.NamespacedName) {
		w := newWorld()
		d := w.addDeployment(newDeployment(1, "web:v1"))
		tpl := d.Spec.Template.DeepCopy()
		w.addReplicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan", Labels: tpl.Labels},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: tpl.Labels}, Template: *tpl}})
		return w, deployment.KeyOf(d)
	}
	t.Run("adoption rechecks the live Deployment", func(t *testing.T) {
		w, key := adoptWorld()
		r := newReconciler(w)
		r.Live = deployment.DeploymentGetterFunc(func(k types.NamespacedName) (*appsv1.Deployment, error) {
			d, err := w.Get(k)
			if err == nil {
				d.UID = "recreated"
			}
			return d, err
		})
		w.writes = nil
		_, err := r.Reconcile(context.Background(), key)
		if err == nil || !strings.Contains(err.Error(), "is gone") {
			t.Fatalf("Reconcile() error = %v; want 'is gone'", err)
		}
		if len(w.writes) != 0 {
			t.Errorf("writes = %q; want none", w.writes)
		}
	})
	t.Run("adoption", func(t *testing.T) {
		w, key := adoptWorld()
		if _, err := newReconciler(w).Reconcile(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		rs, _ := w.GetReplicaSet(context.Background(), types.NamespacedName{Namespace: "ns", Name: "orphan"})
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.Name != "web" {
			t.Errorf("controller of the orphan = %v; want web", ref)
		}
	})
}
