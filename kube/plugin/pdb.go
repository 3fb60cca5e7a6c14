package plugin

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// disruptionBudgets reports the PodDisruptionBudgets that select d's pods
// and allow no disruption now: every eviction of these pods (a node
// drain, a cluster-autoscaler scale-down) is refused. The rollout itself
// deletes pods without evicting them, so a PDB never blocks it; it is a
// warning. The allowance is computed as the disruption controller does
// (healthy pods minus the desired healthy count), from the pods read, so
// that it is right even when no disruption controller runs; the PDB's
// own status is quoted when it has one.
func disruptionBudgets(d *appsv1.Deployment, st *State, now time.Time) []Cause {
	var out []Cause
	for _, pdb := range st.PDBs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		expected := replicas(d.Spec.Replicas)
		var healthy int32
		for _, p := range st.Pods {
			if p.DeletionTimestamp == nil && sel.Matches(labels.Set(p.Labels)) && replicaset.IsPodReady(p) {
				healthy++
			}
		}
		desired, ok := desiredHealthy(pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable, expected)
		if !ok {
			continue
		}
		allowed := max(healthy-desired, 0)
		if allowed > 0 {
			continue
		}
		msg := fmt.Sprintf("PodDisruptionBudget %s allows 0 disruptions (%d healthy, %d required): evictions of these pods (node drains, autoscaler scale-downs) are refused",
			pdb.Name, healthy, desired)
		if pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods > 0 {
			msg += fmt.Sprintf("; its status says %d allowed", pdb.Status.DisruptionsAllowed)
		}
		out = append(out, Cause{Code: DisruptionBudget, Severity: Warning, Message: msg,
			Objects: []string{"poddisruptionbudget/" + pdb.Name},
			Fix:     "fix the rollout so pods become healthy again, or relax the PodDisruptionBudget before draining nodes"})
	}
	return out
}

// desiredHealthy is the disruption controller's desiredHealthy for a
// budget over expected pods: minAvailable (a percentage rounds up), or
// expected − maxUnavailable (a percentage rounds up).
func desiredHealthy(minAvailable, maxUnavailable *intstr.IntOrString, expected int32) (int32, bool) {
	switch {
	case maxUnavailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, int(expected), true)
		if err != nil {
			return 0, false
		}
		return max(expected-int32(v), 0), true
	case minAvailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(minAvailable, int(expected), true)
		if err != nil {
			return 0, false
		}
		return int32(v), true
	}
	return 0, false
}
