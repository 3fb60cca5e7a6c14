package deployment_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/reconcile"
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
	n, err := deployment.WritePlan(context.Background(), w, w, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(p.Actions) + 1; n != want {
		t.Errorf("WritePlan() = %d; want %d", n, want)
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
			n, err := deployment.WritePlan(context.Background(), w, w, p)
			if !errors.Is(err, boom) {
				t.Fatalf("WritePlan() error = %v; want boom", err)
			}
			if n != tt.wantN {
				t.Errorf("WritePlan() = %d; want %d", n, tt.wantN)
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
	if _, err := deployment.WritePlan(context.Background(), w, w, p); !apierrors.IsForbidden(err) {
		t.Fatalf("WritePlan() error = %v; want Forbidden", err)
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
		n, err := deployment.WritePlan(context.Background(), w, nil, p)
		if !apierrors.IsConflict(err) || errors.Is(err, reconcile.ErrTerminal) {
			t.Fatalf("WritePlan() error = %v; want a retriable Conflict", err)
		}
		if n != 2 {
			t.Errorf("WritePlan() = %d; want 2 (create and its event)", n)
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
		_, err := deployment.WritePlan(context.Background(), w, w, p)
		if !errors.Is(err, reconcile.ErrTerminal) {
			t.Fatalf("WritePlan() error = %v; want terminal", err)
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
		if _, err := deployment.WritePlan(context.Background(), w, w, p); err != nil {
			t.Fatalf("WritePlan() error = %v; want nil", err)
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
		if _, err := deployment.WritePlan(context.Background(), w, w, p); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("WritePlan() error = %v; want AlreadyExists", err)
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
	if _, err := deployment.WritePlan(context.Background(), h.w, h.w, p); err != nil {
		t.Fatalf("WritePlan() error = %v\nplan:\n%s", err, p)
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
		return newReconcilerFor(t, w.config())
	}
	t.Run("not found", func(t *testing.T) {
		w := newWorld()
		res, err := newReconciler(w).Reconcile(context.Background(), types.NamespacedName{Namespace: "ns", Name: "gone"})
		if err != nil || res != (reconcile.Result{}) {
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
		var res reconcile.Result
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
		cfg := w.config()
		cfg.Live = reconcile.GetterFunc[*appsv1.Deployment](func(_ context.Context, k types.NamespacedName) (*appsv1.Deployment, error) {
			d, err := w.Get(k)
			if err == nil {
				d.UID = "recreated"
			}
			return d, err
		})
		r := newReconcilerFor(t, cfg)
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

// TestReconcilerDefersStatusAfterScales rolls the same image change out
// with upstream's status timing (EagerStatus) and with the default: by
// default a sync whose only writes are ReplicaSet scales writes no status,
// the next sync writes it, and the rollout ends in the same place with
// fewer status writes.
func TestReconcilerDefersStatusAfterScales(t *testing.T) {
	type outcome struct {
		d              *appsv1.Deployment
		rss            []string
		statusWrites   int
		scaleAndStatus int // syncs that scaled and wrote the status
		scaleOnly      int // syncs that scaled and wrote nothing else
	}
	run := func(eager bool) outcome {
		w := newWorld()
		key := deployment.KeyOf(w.addDeployment(newDeployment(8, "web:v1")))
		cfg := w.config()
		cfg.EagerStatus = eager
		r := newReconcilerFor(t, cfg)
		var out outcome
		step := func() {
			t.Helper()
			w.writes = nil
			if _, err := r.Reconcile(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			var scales, statuses, others int
			for _, wr := range w.writes {
				switch verb, _, _ := strings.Cut(wr, " "); verb {
				case "update":
					scales++
				case "update-status":
					statuses++
				default:
					others++
				}
			}
			out.statusWrites += statuses
			if scales > 0 && others == 0 {
				if statuses > 0 {
					out.scaleAndStatus++
				} else {
					out.scaleOnly++
				}
			}
			w.settle()
			w.dropTerminating()
		}
		for range 4 {
			step()
		}
		w.edit(key, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:v2" })
		for range 20 {
			step()
		}
		out.d, _ = w.Get(key)
		for _, rs := range w.rss {
			out.rss = append(out.rss, fmt.Sprintf("%s %s spec=%d %v", rs.Name, image(rs), ptrVal(rs.Spec.Replicas), rs.Annotations))
		}
		slices.Sort(out.rss)
		return out
	}
	eager, def := run(true), run(false)
	if eager.scaleAndStatus == 0 || eager.scaleOnly != 0 {
		t.Fatalf("eager: %d syncs scaled and wrote the status, %d only scaled; want some, and none", eager.scaleAndStatus, eager.scaleOnly)
	}
	if def.scaleAndStatus != 0 || def.scaleOnly == 0 {
		t.Errorf("default: %d syncs scaled and wrote the status, %d only scaled; want none, and some", def.scaleAndStatus, def.scaleOnly)
	}
	if def.statusWrites >= eager.statusWrites {
		t.Errorf("status writes: default %d, eager %d; want fewer by default", def.statusWrites, eager.statusWrites)
	}
	if !rollout.DeploymentComplete(def.d, def.d.Status) {
		t.Errorf("default: the rollout did not complete: %+v", def.d.Status)
	}
	if diff := cmp.Diff(eager.d.Status, def.d.Status); diff != "" {
		t.Errorf("final status differs (-eager +default):\n%s", diff)
	}
	if diff := cmp.Diff(eager.rss, def.rss); diff != "" {
		t.Errorf("final ReplicaSets differ (-eager +default):\n%s", diff)
	}
	t.Logf("status writes: eager %d, default %d", eager.statusWrites, def.statusWrites)
}
