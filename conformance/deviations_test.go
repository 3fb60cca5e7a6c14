package conformance

// Recognisers of the deliberate differences of deployment.Sync that the
// differential tests count as known deviations (FINDINGS.md).

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/controller"
	deploymentutil "k8s.io/kubernetes/pkg/controller/deployment/util"
)

// recreateOldStatusPending reports, with upstream's own helpers, whether
// the sync of in is the race deployment.Sync deliberately closes
// (rollout.Recreate): an unpaused Recreate Deployment without a scaling
// event, whose old ReplicaSets are all scaled to 0 and have no running
// pod, so that upstream goes on to create or scale up the new ReplicaSet,
// while the status of one of them has not observed its generation. Ours
// waits (writing nothing but the status).
func recreateOldStatusPending(in deployWorld) bool {
	d := in.d
	if d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return false
	}
	rss := cloneRSs(in.rss)
	newRS := deploymentutil.FindNewReplicaSet(d, rss)
	_, olds := deploymentutil.FindOldReplicaSets(d, rss)
	if len(controller.FilterActiveReplicaSets(olds)) > 0 || deploymentutil.GetActualReplicaCountForReplicaSets(olds) > 0 {
		return false
	}
	pending := false
	for _, rs := range olds {
		if rs.Status.ObservedGeneration < rs.Generation {
			pending = true
		}
	}
	if !pending {
		return false
	}
	for _, p := range in.pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || newRS != nil && ref.UID == newRS.UID {
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return false // upstream waits too
		}
	}
	return true
}

// staleStatusesAgree reports whether ours is upstream's sync of w with
// the deviations of deployment's rolling step applied by hand, and which
// (devNewStatus, devOldStatus, or both): for an unpaused RollingUpdate
// Deployment, a new ReplicaSet (upstream's FindNewReplicaSet) whose status
// is behind its generation counts no available pod, and an old one whose
// status is behind its generation counts at most spec.replicas; upstream,
// given the same world so adjusted, makes ours' decisions (everything but
// the Deployment status, which counts the real pods on both sides).
func staleStatusesAgree(ctx context.Context, w deployWorld, o deployResult) (string, bool) {
	if w.d.Spec.Paused || !deploymentutil.IsRollingUpdate(w.d) {
		return "", false
	}
	w2 := w.clone()
	newRS := deploymentutil.FindNewReplicaSet(w2.d, w2.rss)
	var adjusted []string
	if newRS != nil && newRS.Status.ObservedGeneration < newRS.Generation && newRS.Status.AvailableReplicas > 0 {
		newRS.Status.AvailableReplicas = 0
		adjusted = append(adjusted, devNewStatus)
	}
	for _, rs := range w2.rss {
		if rs == newRS || rs.Spec.Replicas == nil || rs.Status.ObservedGeneration >= rs.Generation || rs.Status.AvailableReplicas <= *rs.Spec.Replicas {
			continue
		}
		if len(adjusted) == 0 || adjusted[len(adjusted)-1] != devShrinkingStatus {
			adjusted = append(adjusted, devShrinkingStatus)
		}
		rs.Status.AvailableReplicas = *rs.Spec.Replicas
	}
	if len(adjusted) == 0 {
		return "", false
	}
	u2 := upstreamDeploySync(ctx, w2)
	u2.d.Status = *o.d.Status.DeepCopy()
	known, diff := compareDeploy(w, u2, o)
	return strings.Join(adjusted, "; "), diff == "" && (known == "" || known == devStaleStatus)
}
