//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/rollout"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubectl rollout verbs, as package rollout builds their patches,
// applied with client-go.

type patchFunc func(d *appsv1.Deployment) ([]byte, types.PatchType, error)

var (
	pausePatch   patchFunc = rollout.PausePatch
	resumePatch  patchFunc = rollout.ResumePatch
	restartPatch patchFunc = func(d *appsv1.Deployment) ([]byte, types.PatchType, error) {
		return rollout.RestartPatch(d, time.Now())
	}
)

func (e *env) patch(name string, f patchFunc) {
	e.t.Helper()
	data, pt, err := f(e.get(name))
	if err != nil {
		e.t.Fatal(err)
	}
	d, err := e.cs.AppsV1().Deployments(e.ns).Patch(e.ctx, name, pt, data, metav1.PatchOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.gens[name] = d.Generation
}

// undo is `kubectl rollout undo --to-revision=rev`.
func (e *env) undo(name string, rev int64) rollout.UndoResult {
	e.t.Helper()
	d := e.get(name)
	var owned []*appsv1.ReplicaSet
	for _, rs := range e.replicaSets() {
		if metav1.IsControlledBy(&rs, d) {
			owned = append(owned, &rs)
		}
	}
	res, err := rollout.Undo(d, owned, rev)
	if err != nil {
		e.t.Fatal(err)
	}
	if !res.Skipped {
		d, err := e.cs.AppsV1().Deployments(e.ns).Patch(e.ctx, name, res.PatchType, res.Patch, metav1.PatchOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		e.gens[name] = d.Generation
	}
	return res
}

func TestRollbackUndo(t *testing.T) {
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond})
	e.create(deployment("web", 3, "nginx:1"))
	e.waitComplete("web", 30*time.Second)
	e.update("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	e.waitComplete("web", 60*time.Second)
	if res := e.undo("web", 0); res.Message != "rolled back" {
		t.Fatalf("undo: %q", res.Message)
	}
	e.waitComplete("web", 60*time.Second)
	if img := e.get("web").Spec.Template.Spec.Containers[0].Image; img != "nginx:1" {
		t.Fatalf("image after undo %q, want nginx:1", img)
	}
	rss := e.replicaSets()
	if len(rss) != 2 {
		t.Fatalf("%d ReplicaSets after undo, want 2 (the old one reused)", len(rss))
	}
	for _, rs := range rss {
		if rs.Spec.Template.Spec.Containers[0].Image == "nginx:1" {
			if rev := rs.Annotations["deployment.kubernetes.io/revision"]; rev != "3" {
				t.Errorf("restored ReplicaSet revision %q, want 3", rev)
			}
			if hist := rs.Annotations["deployment.kubernetes.io/revision-history"]; hist != "1" {
				t.Errorf("restored ReplicaSet revision-history %q, want 1", hist)
			}
		}
	}
	if res := e.undo("web", 3); !res.Skipped {
		t.Errorf("undo to the current revision was not skipped: %q", res.Message)
	}
}

func TestRolloutRestart(t *testing.T) {
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond})
	e.create(deployment("web", 3, "nginx:1"))
	e.waitComplete("web", 30*time.Second)
	before := map[types.UID]bool{}
	for _, p := range e.pods() {
		before[p.UID] = true
	}
	e.patch("web", restartPatch)
	e.waitComplete("web", 60*time.Second)
	e.waitFor("old pods gone", 30*time.Second, func(s cluster.Snapshot) bool {
		for _, rs := range s.ReplicaSets {
			if *rs.Spec.Replicas == 0 && rs.Status.Replicas != 0 {
				return false
			}
		}
		return len(s.ReplicaSets) == 2
	})
	for _, p := range e.pods() {
		if before[p.UID] {
			t.Errorf("pod %s survived the restart", p.Name)
		}
	}
}

func TestProgressDeadlineExceeded(t *testing.T) {
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond, neverReady: func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Image == "broken:1"
	}})
	d := deployment("web", 3, "nginx:1")
	d.Spec.ProgressDeadlineSeconds = new(int32(3))
	e.create(d)
	e.waitComplete("web", 30*time.Second)
	e.update("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "broken:1" })
	e.waitFor("ProgressDeadlineExceeded", 30*time.Second, func(s cluster.Snapshot) bool {
		return hasCondition(s.Deployments["web"], appsv1.DeploymentProgressing, "ProgressDeadlineExceeded")
	})
	// The rollout stalls but the old replicas stay available (25% bounds).
	if d := e.get("web"); d.Status.AvailableReplicas < 2 {
		t.Errorf("available %d after the deadline, want ≥ 2", d.Status.AvailableReplicas)
	}
}
