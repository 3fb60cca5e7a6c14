package deployment_test

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// describe renders the world one object per line, sorted by name.
func (w *world) describe(key types.NamespacedName) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	d := w.deployments[key]
	s := d.Status
	fmt.Fprintf(&b, "  deployment %s gen=%d replicas=%d image=%s", d.Name, d.Generation, ptrVal(d.Spec.Replicas), d.Spec.Template.Spec.Containers[0].Image)
	if d.Spec.Paused {
		b.WriteString(" paused")
	}
	if r := d.Annotations[rollout.RevisionAnnotation]; r != "" {
		fmt.Fprintf(&b, " rev=%s", r)
	}
	if r, ok := d.Annotations[rollout.RollbackToAnnotation]; ok {
		fmt.Fprintf(&b, " rollbackTo=%s", r)
	}
	fmt.Fprintf(&b, "\n    status gen=%d replicas=%d updated=%d ready=%d available=%d unavailable=%d", s.ObservedGeneration,
		s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas)
	if s.CollisionCount != nil {
		fmt.Fprintf(&b, " collisions=%d", *s.CollisionCount)
	}
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s)", c.Type, c.Status, c.Reason)
	}
	b.WriteByte('\n')
	names := make([]string, 0, len(w.rss))
	for k := range w.rss {
		names = append(names, k.Name)
	}
	slices.Sort(names)
	for _, n := range names {
		rs := w.rss[types.NamespacedName{Namespace: key.Namespace, Name: n}]
		owner := "orphan"
		if ref := metav1.GetControllerOf(rs); ref != nil {
			owner = "owned"
			if ref.UID != d.UID {
				owner = "foreign"
			}
		}
		fmt.Fprintf(&b, "  rs %s %s image=%s rev=%s spec=%d replicas=%d available=%d", rs.Name, owner, image(rs),
			rs.Annotations[rollout.RevisionAnnotation], ptrVal(rs.Spec.Replicas), rs.Status.Replicas, rs.Status.AvailableReplicas)
		if h := rs.Annotations[rollout.RevisionHistoryAnnotation]; h != "" {
			fmt.Fprintf(&b, " history=%s", h)
		}
		if v, ok := rs.Annotations[rollout.DesiredReplicasAnnotation]; ok {
			fmt.Fprintf(&b, " desired=%s max=%s", v, rs.Annotations[rollout.MaxReplicasAnnotation])
		}
		if t := w.terminating[rs.UID]; t > 0 {
			fmt.Fprintf(&b, " terminating=%d", t)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
