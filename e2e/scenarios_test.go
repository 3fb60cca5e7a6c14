package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// owned lists the live ReplicaSets of Deployment name.
func (w *world) owned(name string) []*appsv1.ReplicaSet {
	w.tb.Helper()
	var rss []*appsv1.ReplicaSet
	w.write("list replicasets", func(ctx context.Context) (err error) {
		rss, _, err = w.c.ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err
	})
	return rollout.OwnedReplicaSets(w.get(name), rss)
}

// images maps the image of each ReplicaSet of name to its spec.replicas.
func (w *world) images(name string) map[string]int32 {
	w.tb.Helper()
	out := map[string]int32{}
	for _, rs := range w.owned(name) {
		out[rs.Spec.Template.Spec.Containers[0].Image] = *rs.Spec.Replicas
	}
	return out
}

func (w *world) wantImages(name string, want map[string]int32) {
	w.tb.Helper()
	if got := w.images(name); fmt.Sprint(got) != fmt.Sprint(want) {
		w.tb.Errorf("ReplicaSets of %s (image: replicas) = %v; want %v", name, got, want)
	}
}

const limit = time.Hour

func TestCreateAndScale(t *testing.T) {
	w := newWorld(t, worldConfig{Seed: 1})
	w.create(newDeployment("web", 5, "app:1"))
	w.converge(limit)
	for _, n := range []int32{12, 2, 0, 3} {
		w.scale("web", n)
		w.converge(limit)
		w.wantImages("web", map[string]int32{"app:1": n})
	}
}

func TestRollingUpdate(t *testing.T) {
	for _, tt := range []struct{ surge, unavailable string }{
		{"25%", "25%"}, {"0", "1"}, {"1", "0"}, {"100%", "0"}, {"0", "100%"}, {"3", "2"},
	} {
		t.Run(tt.surge+"/"+tt.unavailable, func(t *testing.T) {
			w := newWorld(t, worldConfig{Seed: 2})
			w.create(withRolling(newDeployment("web", 10, "app:1"), tt.surge, tt.unavailable))
			w.converge(limit)
			w.setImage("web", "app:2")
			w.converge(limit)
			w.wantImages("web", map[string]int32{"app:1": 0, "app:2": 10})
		})
	}
}

func TestRecreate(t *testing.T) {
	w := newWorld(t, worldConfig{Seed: 3})
	d := newDeployment("web", 6, "app:1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	w.create(d)
	w.converge(limit)
	w.setImage("web", "app:2")
	w.converge(limit)
	w.wantImages("web", map[string]int32{"app:1": 0, "app:2": 6})
	w.scale("web", 9)
	w.converge(limit)
}

// A new template while a rollout is half way: the half-rolled-out
// ReplicaSet is an old one now, and shrinks with the first.
func TestRolloverMidRollout(t *testing.T) {
	w := newWorld(t, worldConfig{Seed: 4, Model: memcluster.FixedModel(memcluster.PodBehavior{StartDelay: time.Second, ReadyDelay: 20 * time.Second})})
	w.create(newDeployment("web", 10, "app:1"))
	w.converge(limit)
	w.setImage("web", "app:2")
	w.runUntil("app:2 has ready pods", limit, func() bool {
		for _, rs := range w.owned("web") {
			if rs.Spec.Template.Spec.Containers[0].Image == "app:2" && rs.Status.ReadyReplicas > 0 {
				return true
			}
		}
		return false
	})
	if img := w.images("web"); img["app:1"] == 0 {
		t.Fatalf("rollout not half way: %v", img)
	}
	w.setImage("web", "app:3")
	w.converge(limit)
	w.wantImages("web", map[string]int32{"app:1": 0, "app:2": 0, "app:3": 10})
}

func TestPauseResume(t *testing.T) {
	w := newWorld(t, worldConfig{Seed: 5})
	w.create(newDeployment("web", 4, "app:1"))
	w.converge(limit)
	patch, pt, err := rollout.PausePatch(w.get("web"))
	if err != nil {
		t.Fatal(err)
	}
	w.patchAs("web", pt, patch)
	w.setImage("web", "app:2")
	w.scale("web", 6) // a paused Deployment still scales
	w.runUntil("the paused deployment is scaled", limit, func() bool {
		d := w.get("web")
		return d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 6
	})
	w.runFor(10 * time.Minute)
	w.wantImages("web", map[string]int32{"app:1": 6})
	if c := rollout.GetCondition(w.get("web").Status, appsv1.DeploymentProgressing); c == nil || c.Reason != rollout.ReasonDeploymentPaused {
		t.Errorf("Progressing condition of a paused deployment = %+v; want reason %s", c, rollout.ReasonDeploymentPaused)
	}
	patch, pt, err = rollout.ResumePatch(w.get("web"))
	if err != nil {
		t.Fatal(err)
	}
	w.patchAs("web", pt, patch)
	w.converge(limit)
	w.wantImages("web", map[string]int32{"app:1": 0, "app:2": 6})
}

// kubectl rollout undo, as rollout.Undo computes it, sent with the
// cluster's Patch.
func TestRollback(t *testing.T) {
	w := newWorld(t, worldConfig{Seed: 6})
	w.create(newDeployment("web", 5, "app:1"))
	w.converge(limit)
	w.setImage("web", "app:2")
	w.converge(limit)
	w.undo("web", 0)
	w.converge(limit)
	w.wantImages("web", map[string]int32{"app:1": 5, "app:2": 0})
	d := w.get("web")
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "app:1" {
		t.Errorf("image after undo = %s; want app:1", got)
	}
	for _, rs := range w.owned("web") {
		if rs.Spec.Template.Spec.Containers[0].Image == "app:1" && rs.Annotations[rollout.RevisionAnnotation] != "3" {
			t.Errorf("revision of the restored rs = %q; want 3", rs.Annotations[rollout.RevisionAnnotation])
		}
	}
	w.undo("web", 2) // back to app:2, by number
	w.converge(limit)
	w.wantImages("web", map[string]int32{"app:1": 0, "app:2": 5})
}

func (w *world) undo(name string, toRevision int64) {
	w.tb.Helper()
	res, err := rollout.Undo(w.get(name), w.owned(name), toRevision)
	if err != nil || res.Skipped {
		w.tb.Fatalf("Undo(%s, %d) = %+v, %v", name, toRevision, res, err)
	}
	w.patchAs(name, res.PatchType, res.Patch)
}

// An image that never pulls: the rollout stops at the progress deadline
// with the old pods still serving (the checks hold maxUnavailable), and a
// fixed image then rolls out.
func TestBadImage(t *testing.T) {
	healthy := memcluster.PodBehavior{StartDelay: time.Second, ReadyDelay: 2 * time.Second, ShutdownDelay: time.Second}
	bad := healthy
	bad.Failure = memcluster.PodBadImage
	crash := healthy
	crash.Failure = memcluster.PodCrashLoop
	w := newWorld(t, worldConfig{Seed: 7, Model: memcluster.ImageModel(map[string]memcluster.PodBehavior{"app:bad": bad, "app:crash": crash}, memcluster.FixedModel(healthy))})
	d := newDeployment("web", 10, "app:1")
	d.Spec.ProgressDeadlineSeconds = ptr(int32(120))
	w.create(d)
	w.converge(limit)
	for _, image := range []string{"app:bad", "app:crash"} {
		w.setImage("web", image)
		w.runUntil("the progress deadline is exceeded", limit, func() bool {
			c := rollout.GetCondition(w.get("web").Status, appsv1.DeploymentProgressing)
			return c != nil && c.Reason == rollout.ReasonProgressDeadlineExceeded
		})
		if got := w.get("web").Status.AvailableReplicas; got < 8 {
			t.Errorf("%s: %d available; want at least 10-2", image, got)
		}
	}
	w.setImage("web", "app:2")
	w.converge(limit)
	w.wantImages("web", map[string]int32{"app:1": 0, "app:bad": 0, "app:crash": 0, "app:2": 10})
}

// Deleting a Deployment collects its ReplicaSets and their pods.
func TestDeleteDeployment(t *testing.T) {
	w := newWorld(t, worldConfig{Seed: 8})
	w.create(newDeployment("web", 5, "app:1"))
	w.create(newDeployment("api", 3, "api:1"))
	w.converge(limit)
	w.setImage("web", "app:2")
	w.runFor(2 * time.Second) // mid-rollout
	w.write("delete deployment", func(ctx context.Context) error {
		return w.c.Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{})
	})
	w.converge(limit)
	rss, _, _ := w.c.ReplicaSets(ns).List(w.ctx, metav1.ListOptions{})
	pods, _, _ := w.c.Pods(ns).List(w.ctx, metav1.ListOptions{})
	if len(rss) != 1 || len(pods) != 3 {
		t.Errorf("after deleting web: %d ReplicaSets, %d pods; want those of api only (1, 3)", len(rss), len(pods))
	}
}

// A Deployment adopts the orphan ReplicaSets its selector matches, and
// their pods: the one with its template keeps its pods, the others are
// scaled down.
func TestOrphanAdoption(t *testing.T) {
	w := newWorld(t, worldConfig{Seed: 9})
	d := newDeployment("web", 4, "app:1")
	orphan := func(name, image string, replicas int32) *appsv1.ReplicaSet {
		labels := map[string]string{"app": "web", "orphan": name}
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
				},
			},
		}
	}
	same := orphan("same", "app:1", 3)
	same.Spec.Selector.MatchLabels = map[string]string{"app": "web"}
	same.Spec.Template.Labels = map[string]string{"app": "web"}
	for _, rs := range []*appsv1.ReplicaSet{same, orphan("older", "app:0", 2)} {
		w.write("create rs "+rs.Name, func(ctx context.Context) error {
			_, err := w.c.ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
			return err
		})
	}
	w.runUntil("the orphans run their pods", limit, func() bool {
		pods, _, _ := w.c.Pods(ns).List(w.ctx, metav1.ListOptions{})
		return len(pods) == 5
	})
	before, _, _ := w.c.Pods(ns).List(w.ctx, metav1.ListOptions{LabelSelector: "!orphan"})
	w.create(d)
	w.converge(limit)
	w.wantImages("web", map[string]int32{"app:0": 0, "app:1": 4})
	after, _, _ := w.c.Pods(ns).List(w.ctx, metav1.ListOptions{LabelSelector: "!orphan"})
	kept := 0
	for _, p := range after {
		for _, b := range before {
			if p.UID == b.UID {
				kept++
			}
		}
	}
	if len(before) != 3 || kept != 3 {
		t.Errorf("pods of the adopted rs: %d before, %d of them kept; want 3, 3", len(before), kept)
	}
}

// A thousand Deployments created at once all roll out; with
// CTRLKIT_SOAK=1 they are then all updated at once too. (Cost grows
// linearly with the pods; BenchmarkScale measures it.)
func TestThousandDeployments(t *testing.T) {
	n := 1000
	switch {
	case testing.Short():
		n = 100
	case raceEnabled && os.Getenv("CTRLKIT_SOAK") != "1":
		n = 100 // 1,000 take about four minutes with -race
	}
	w := newWorld(t, worldConfig{Seed: 10})
	wall := time.Now()
	for i := range n {
		w.create(newDeployment(fmt.Sprintf("d%04d", i), 1, "app:1"))
	}
	w.converge(limit)
	t.Logf("%d deployments rolled out at +%v (wall %v)", n, w.now(), time.Since(wall))
	if os.Getenv("CTRLKIT_SOAK") != "1" {
		return
	}
	for i := range n {
		w.setImage(fmt.Sprintf("d%04d", i), "app:2")
	}
	w.converge(limit)
	t.Logf("%d deployments updated at +%v (wall %v)", n, w.now(), time.Since(wall))
}

func ptr[T any](v T) *T { return &v }
