package webapp_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/examples/webapp"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/rollout"
)

func newWebApp(image string, replicas int32) *webapp.WebApp {
	quarter := intOrPercent("25%")
	history, deadline := int32(10), int32(600)
	return &webapp.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: webapp.Spec{Replicas: &replicas, Image: image, RevisionHistoryLimit: &history, ProgressDeadlineSeconds: &deadline,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}}}}
}

func TestRollouts(t *testing.T) {
	e := newEnv(t)
	w := newWebApp("nginx:1.27", 4)
	e.apps.put(w)
	e.syncUntil(rolledOut("nginx:1.27"))
	e.assertConverged()

	// A rolling update.
	w.Spec.Image = "nginx:1.28"
	e.apps.put(w)
	e.syncUntil(rolledOut("nginx:1.28"))
	e.assertConverged()

	// Paused: a template change waits; resumed, it rolls out.
	w.Spec.Paused, w.Spec.Image = true, "nginx:1.29"
	e.apps.put(w)
	e.syncUntil(func(w *webapp.WebApp) bool { return w.Status.ObservedGeneration == w.Generation })
	if got := len(e.replicaSets()); got != 2 {
		t.Errorf("paused WebApp has %d ReplicaSets; want 2 (no new one)", got)
	}
	w.Spec.Paused = false
	e.apps.put(w)
	e.syncUntil(rolledOut("nginx:1.29"))

	// Rollback to revision 1, the way the Deployment controller reads it.
	cur, _ := e.apps.Get(e.ctx, key)
	cur.Annotations = map[string]string{"deprecated.deployment.rollback.to": "1"}
	e.apps.put(cur)
	e.syncUntil(rolledOut("nginx:1.27"))
	e.assertConverged()

	// Recreate.
	cur, _ = e.apps.Get(e.ctx, key)
	cur.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	cur.Spec.Image = "nginx:1.30"
	e.apps.put(cur)
	e.syncUntil(rolledOut("nginx:1.30"))
	e.assertConverged()

	want := []string{
		"nginx:1.27 rev=4 replicas=0 owner=example.ctrlkit.io/v1/WebApp web",
		"nginx:1.28 rev=2 replicas=0 owner=example.ctrlkit.io/v1/WebApp web",
		"nginx:1.29 rev=3 replicas=0 owner=example.ctrlkit.io/v1/WebApp web",
		"nginx:1.30 rev=5 replicas=4 owner=example.ctrlkit.io/v1/WebApp web",
	}
	if got := e.replicaSets(); !slices.Equal(got, want) {
		t.Errorf("ReplicaSets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	final, _ := e.apps.Get(e.ctx, key)
	if final.Annotations[rollout.RevisionAnnotation] != "5" {
		t.Errorf("WebApp revision annotation = %q; want 5", final.Annotations[rollout.RevisionAnnotation])
	}
	if c := rollout.GetCondition(final.Status.DeploymentStatus, appsv1.DeploymentProgressing); c == nil || c.Reason != rollout.ReasonNewReplicaSetAvailable {
		t.Errorf("Progressing = %+v; want NewReplicaSetAvailable", c)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		if !strings.HasPrefix(ev, "*webapp.WebApp ") {
			t.Errorf("event not recorded against the WebApp: %s", ev)
		}
	}
	if !slices.ContainsFunc(e.events, func(s string) bool { return strings.Contains(s, "DeploymentRollback") }) {
		t.Errorf("no rollback event in %v", e.events)
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	e := newEnv(t)
	w := newWebApp("v1", 2)
	one := int32(1)
	w.Spec.RevisionHistoryLimit = &one
	e.apps.put(w)
	e.syncUntil(rolledOut("v1"))
	for _, img := range []string{"v2", "v3"} {
		w.Spec.Image = img
		e.apps.put(w)
		e.syncUntil(rolledOut(img))
	}
	e.syncUntil(func(*webapp.WebApp) bool { return len(e.replicaSets()) == 2 }) // history cleanup
	want := []string{
		"v2 rev=2 replicas=0 owner=example.ctrlkit.io/v1/WebApp web",
		"v3 rev=3 replicas=2 owner=example.ctrlkit.io/v1/WebApp web",
	}
	if got := e.replicaSets(); !slices.Equal(got, want) {
		t.Errorf("ReplicaSets = %q; want %q", got, want)
	}
	e.assertConverged()
}

// lossy is a WebApp whose status loses the conditions' lastUpdateTime:
// every sync would write the status again.
type lossy struct{ webapp.WebApp }

func (l *lossy) SetDeploymentStatus(s appsv1.DeploymentStatus) {
	s = *s.DeepCopy()
	for i := range s.Conditions {
		s.Conditions[i].LastUpdateTime = metav1.Time{}
	}
	l.WebApp.SetDeploymentStatus(s)
}

func (l *lossy) DeepCopyObject() runtime.Object { return &lossy{*l.WebApp.DeepCopy()} }

func TestLossyStatusIsRefused(t *testing.T) {
	w := &lossy{*newWebApp("v1", 1)}
	w.Namespace, w.Name = key.Namespace, key.Name
	r, err := deployment.NewWorkloadReconciler(deployment.WorkloadConfig[*lossy]{
		Kind:        webapp.Kind,
		Workloads:   reconcile.GetterFunc[*lossy](func(context.Context, types.NamespacedName) (*lossy, error) { return w, nil }),
		ReplicaSets: reconcile.ListerFunc[*appsv1.ReplicaSet](func(context.Context, string, labels.Selector) ([]*appsv1.ReplicaSet, error) { return nil, nil }),
		Client:      lossyClient{},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Reconcile(context.Background(), key)
	if !reconcile.IsTerminal(err) || !strings.Contains(err.Error(), "does not keep the status") {
		t.Errorf("Reconcile of a lossy workload: err = %v; want a terminal error about the status", err)
	}
}

type lossyClient struct {
	deployment.WorkloadClient[*lossy]
}

func TestNewWorkloadReconcilerErrors(t *testing.T) {
	for _, cfg := range []deployment.WorkloadConfig[*webapp.WebApp]{
		{Workloads: &store{}, Client: client{}},
		{Kind: webapp.Kind, Client: client{}},
		{Kind: webapp.Kind, Workloads: &store{}},
	} {
		if _, err := deployment.NewWorkloadReconciler(cfg); err == nil {
			t.Errorf("NewWorkloadReconciler(%+v) succeeded; want an error", cfg)
		}
	}
}

func intOrPercent(s string) intstr.IntOrString { return intstr.FromString(s) }
