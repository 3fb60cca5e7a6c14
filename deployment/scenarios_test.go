package deployment_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/rollout"
)

func setImage(img string) func(d *appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = img }
}

func setReplicas(n int32) func(d *appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Replicas = &n }
}

func setPaused(p bool) func(d *appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Paused = p }
}

func setRollbackTo(rev string) func(d *appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[rollout.RollbackToAnnotation] = rev
	}
}

func fenceposts(surge, unavailable intstr.IntOrString) func(d *appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
	}
}

// TestTrace replays multi-step scenarios and compares them with the golden
// files in testdata (go test -update rewrites them).
func TestTrace(t *testing.T) {
	tests := []struct {
		name string
		d    *appsv1.Deployment
		run  func(h *harness)
	}{
		{
			// D=10 with 25%/25%: maxSurge 3, maxUnavailable 2.
			name: "rolling_basic",
			d:    newDeployment(10, "web:v1"),
			run: func(h *harness) {
				h.note("create: one ReplicaSet of 10 (NewRSNewReplicas = 0 + min(13−0, 10−0) = 10)")
				h.converge(10)
				h.edit("image web:v2", setImage("web:v2"))
				h.note("new RS starts at min(13−10, 10) = 3; then old goes to 13−2−... as availability allows")
				h.converge(20)
			},
		},
		{
			// maxSurge 0 and maxUnavailable 0 resolve to (0, 1): the
			// fencepost lets the rollout proceed one pod at a time.
			name: "rolling_fencepost",
			d: func() *appsv1.Deployment {
				d := newDeployment(3, "web:v1")
				fenceposts(intstr.FromInt32(0), intstr.FromInt32(0))(d)
				return d
			}(),
			run: func(h *harness) {
				h.converge(10)
				h.edit("image web:v2", setImage("web:v2"))
				h.converge(20)
			},
		},
		{
			name: "recreate",
			d: func() *appsv1.Deployment {
				d := newDeployment(3, "web:v1")
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
				return d
			}(),
			run: func(h *harness) {
				h.converge(10)
				h.edit("image web:v2", setImage("web:v2"))
				h.note("old RS to 0, wait until its pods are gone, then create the new RS at 3")
				h.converge(10)
			},
		},
		{
			name: "rollover",
			d:    newDeployment(10, "web:v1"),
			run: func(h *harness) {
				h.converge(10)
				h.edit("image web:v2", setImage("web:v2"))
				h.sync()
				h.sync()
				h.edit("image web:v3 in the middle of the v2 rollout", setImage("web:v3"))
				h.converge(20)
			},
		},
		{
			name: "pause_scale_resume",
			d:    newDeployment(10, "web:v1"),
			run: func(h *harness) {
				h.converge(10)
				h.edit("image web:v2", setImage("web:v2"))
				h.sync()
				h.sync()
				h.edit("pause", setPaused(true))
				h.sync()
				h.edit("scale to 20 while paused", setReplicas(20))
				h.note("proportional: D+surge 20+5=25 spread over the active RSs by size")
				h.converge(10)
				h.edit("resume", setPaused(false))
				h.converge(20)
			},
		},
		{
			name: "rollback",
			d:    newDeployment(4, "web:v1"),
			run: func(h *harness) {
				h.converge(10)
				h.edit("image web:v2", setImage("web:v2"))
				h.converge(20)
				h.edit("image web:v3", setImage("web:v3"))
				h.converge(20)
				h.edit("roll back to revision 1", setRollbackTo("1"))
				h.note("the template of revision 1 comes back; the next syncs give that RS revision 4 (history 1)")
				h.converge(20)
				h.edit("roll back to the previous revision (0)", setRollbackTo("0"))
				h.converge(20)
				h.edit("roll back to revision 9, which does not exist", setRollbackTo("9"))
				h.converge(5)
				h.edit("roll back to the current revision", setRollbackTo("5"))
				h.converge(5)
			},
		},
		{
			name: "scale_during_rollout",
			d:    newDeployment(10, "web:v1"),
			run: func(h *harness) {
				h.converge(10)
				h.edit("image web:v2", setImage("web:v2"))
				h.sync()
				h.edit("scale up to 15 mid-rollout", setReplicas(15))
				h.note("scaling event: D+surge = 15+4 = 19; the active RSs share the difference in proportion")
				h.sync()
				h.edit("scale down to 5", setReplicas(5))
				h.converge(20)
			},
		},
		{
			name: "hash_collision",
			d:    newDeployment(2, "web:v1"),
			run: func(h *harness) {
				d, _ := h.w.Get(h.key)
				name := rollout.ReplicaSetName(d.Name, rollout.ComputeHash(&d.Spec.Template, nil))
				h.note("someone else's ReplicaSet already holds the name %s, with another template", name)
				other := newDeployment(1, "other:v1").Spec.Template
				other.Labels = map[string]string{"app": "other"}
				h.w.addReplicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: other.Labels},
					Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: other.Labels}, Template: other}})
				h.converge(10)
			},
		},
		{
			name: "history_cleanup",
			d: func() *appsv1.Deployment {
				d := newDeployment(2, "web:v1")
				d.Spec.RevisionHistoryLimit = ptr(int32(1))
				return d
			}(),
			run: func(h *harness) {
				h.converge(10)
				for _, img := range []string{"web:v2", "web:v3", "web:v4"} {
					h.edit("image "+img, setImage(img))
					h.converge(20)
				}
			},
		},
		{
			name: "progress_deadline",
			d: func() *appsv1.Deployment {
				d := newDeployment(2, "web:v1")
				d.Spec.ProgressDeadlineSeconds = ptr(int32(30))
				return d
			}(),
			run: func(h *harness) {
				h.converge(10)
				h.w.unhealthyImage = "web:bad"
				h.edit("image web:bad, whose pods never become ready", setImage("web:bad"))
				p := h.converge(10)
				h.note("no progress: wait for the requeue (%s)", p.RequeueAfter)
				h.w.now = h.w.now.Add(p.RequeueAfter)
				h.sync()
				h.edit("image web:v2 fixes it", setImage("web:v2"))
				h.converge(20)
			},
		},
		{
			name: "adoption",
			d:    newDeployment(3, "web:v1"),
			run: func(h *harness) {
				d, _ := h.w.Get(h.key)
				tpl := d.Spec.Template.DeepCopy()
				hash := rollout.ComputeHash(tpl, nil)
				tpl.Labels[rollout.HashLabel] = hash
				h.note("an orphan with the current template, an orphan with an old one, and an owned RS that no longer matches")
				h.w.addReplicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-orphan-current", Labels: tpl.Labels,
					Annotations: map[string]string{rollout.RevisionAnnotation: "2"}},
					Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: tpl.Labels}, Template: *tpl}})
				old := tpl.DeepCopy()
				old.Spec.Containers[0].Image = "web:v0"
				old.Labels = map[string]string{"app": "web", rollout.HashLabel: "old"}
				h.w.addReplicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-orphan-old", Labels: old.Labels,
					Annotations: map[string]string{rollout.RevisionAnnotation: "1"}},
					Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: old.Labels}, Template: *old}})
				gone := old.DeepCopy()
				gone.Labels = map[string]string{"app": "elsewhere"}
				h.w.addReplicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-relabelled", Labels: gone.Labels,
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
					Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: gone.Labels}, Template: *gone}})
				h.w.settle()
				h.converge(10)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.d)
			tt.run(h)
			h.check(tt.name)
		})
	}
}

func ptr[T any](v T) *T { return &v }

var _ = corev1.PodRunning
