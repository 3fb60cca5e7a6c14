package rollout

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// OwnedReplicaSets keeps the ReplicaSets whose controller reference
// points at d's UID (kubectl's ListReplicaSets filter,
// metav1.IsControlledBy), in order. rss is not modified.
func OwnedReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	if d == nil {
		return nil
	}
	for _, rs := range rss {
		if rs != nil && metav1.IsControlledBy(rs, d) {
			out = append(out, rs)
		}
	}
	return out
}

// kubectlOrder is kubectl's GetAllReplicaSets order: the old ReplicaSets
// oldest first, then the new one.
func kubectlOrder(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	_, all := FindOldReplicaSets(d, rss)
	if n := FindNewReplicaSet(d, rss); n != nil {
		all = append(all, n)
	}
	return all
}

// HistoryEntry is one revision of `kubectl rollout history`.
type HistoryEntry struct {
	// Revision is the ReplicaSet's revision (0 if it has no annotation).
	Revision int64
	// ChangeCause is the kubernetes.io/change-cause annotation of the
	// ReplicaSet or, if empty, of its template ("<none>" when printed empty).
	ChangeCause string
	// Template is the ReplicaSet's pod template, as kubectl prints it for
	// --revision: with the change cause added to its annotations.
	Template corev1.PodTemplateSpec
	// ReplicaSet is the caller's object.
	ReplicaSet *appsv1.ReplicaSet
	// Aliases are the earlier revisions this ReplicaSet served (its
	// revision-history annotation), oldest first; unparseable entries are
	// dropped.
	Aliases []int64
}

// History lists d's revisions, ascending (kubectl DeploymentHistoryViewer):
// one entry per revision over rss (already filtered by ownership, see
// [OwnedReplicaSets]); when two ReplicaSets share a revision, the later one
// in kubectl's order (old ReplicaSets oldest first, then the new one) wins.
// ReplicaSets whose revision does not parse are skipped with a warning by
// kubectl; here they are reported in err, wrapping [ErrIgnoredByUpstream].
// An empty result is kubectl's "No rollout history found.".
func History(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) ([]HistoryEntry, error) {
	byRev := map[int64]HistoryEntry{}
	var errs []error
	for _, rs := range kubectlOrder(d, rss) {
		v, err := Revision(rs)
		if err != nil {
			errs = append(errs, revisionErr(rs, err))
			continue
		}
		tpl := *rs.Spec.Template.DeepCopy()
		if tpl.Annotations == nil {
			tpl.Annotations = map[string]string{}
		}
		if cause := rs.Annotations[ChangeCauseAnnotation]; cause != "" {
			tpl.Annotations[ChangeCauseAnnotation] = cause
		}
		byRev[v] = HistoryEntry{
			Revision:    v,
			ChangeCause: tpl.Annotations[ChangeCauseAnnotation],
			Template:    tpl,
			ReplicaSet:  rs,
			Aliases:     aliases(rs.Annotations[RevisionHistoryAnnotation]),
		}
	}
	out := make([]HistoryEntry, 0, len(byRev))
	for _, e := range byRev {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out, joinIgnored(errs...)
}

func aliases(history string) []int64 {
	var out []int64
	for _, s := range strings.Split(history, ",") {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// HistoryRevision picks revision rev from entries, with kubectl's error
// "unable to find the specified revision" when it is absent.
func HistoryRevision(entries []HistoryEntry, rev int64) (HistoryEntry, error) {
	for _, e := range entries {
		if e.Revision == rev {
			return e, nil
		}
	}
	return HistoryEntry{}, errors.New("unable to find the specified revision")
}

// revisionNotFound is kubectl's error for an unknown --to-revision.
func revisionNotFound(rev int64) error {
	return fmt.Errorf("unable to find specified revision %d in history", rev)
}

// SelectRollbackTarget picks the ReplicaSet `kubectl rollout undo
// --to-revision=toRevision` restores, over d's owned ReplicaSets rss
// (kubectl deploymentRevision). toRevision 0 means the previous revision:
// the ReplicaSet with the second-highest revision (unannotated ones count as
// 0; a tie with the highest counts as second), else the error `no rollout
// history found for deployment "<name>"`. A positive toRevision must match
// exactly, else `unable to find specified revision N in history` — the
// error for a negative one too. ReplicaSets whose revision does not parse
// are skipped.
func SelectRollbackTarget(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, toRevision int64) (*appsv1.ReplicaSet, error) {
	if toRevision < 0 {
		return nil, revisionNotFound(toRevision)
	}
	if d == nil {
		return nil, errors.New("rollout: nil Deployment")
	}
	var latest, previous *appsv1.ReplicaSet
	latestRev, previousRev := int64(-1), int64(-1)
	for _, rs := range kubectlOrder(d, rss) {
		v, err := Revision(rs)
		if err != nil {
			continue
		}
		switch {
		case toRevision > 0:
			if v == toRevision {
				return rs, nil
			}
		case latestRev < v:
			previous, previousRev = latest, latestRev
			latest, latestRev = rs, v
		case previousRev < v:
			previous, previousRev = rs, v
		}
	}
	if toRevision > 0 {
		return nil, revisionNotFound(toRevision)
	}
	if previous == nil {
		return nil, fmt.Errorf("no rollout history found for deployment %q", d.Name)
	}
	return previous, nil
}

// ErrPausedRollback is kubectl's refusal to undo a paused Deployment.
var ErrPausedRollback = errors.New("you cannot rollback a paused deployment; resume it first with 'kubectl rollout resume' and try again")

// RollbackPatch is the JSON patch `kubectl rollout undo` sends to restore
// target's pod template on d (kubectl DeploymentRollbacker.Rollback):
//
//	[{"op":"replace","path":"/spec/template","value":<template>},
//	 {"op":"replace","path":"/metadata/annotations","value":<annotations>}]
//
// The template is target's without the pod-template-hash label; the
// annotations keep only d's skip-listed ones and add target's others (see
// [SetDeploymentAnnotationsTo]). skipped is true, with no patch, when the
// templates already match — kubectl reports success then. A paused d is
// [ErrPausedRollback]. Neither argument is modified.
func RollbackPatch(d *appsv1.Deployment, target *appsv1.ReplicaSet) (patch []byte, pt types.PatchType, skipped bool, err error) {
	if d == nil || target == nil {
		return nil, "", false, errors.New("rollout: RollbackPatch needs a Deployment and a target ReplicaSet")
	}
	if d.Spec.Paused {
		return nil, "", false, ErrPausedRollback
	}
	if EqualIgnoreHash(&target.Spec.Template, &d.Spec.Template) {
		return nil, "", true, nil
	}
	tpl := target.Spec.Template.DeepCopy()
	delete(tpl.Labels, HashLabel)
	patch, err = json.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/template", "value": tpl},
		{"op": "replace", "path": "/metadata/annotations", "value": rollbackAnnotations(d.Annotations, target)},
	})
	if err != nil {
		return nil, "", false, fmt.Errorf("rollout: rollback patch: %w", err)
	}
	return patch, types.JSONPatchType, false, nil
}

// UndoResult is the outcome of [Undo].
type UndoResult struct {
	// Target is the ReplicaSet whose template is restored.
	Target *appsv1.ReplicaSet
	// Patch and PatchType are the request to send; Patch is nil when
	// Skipped.
	Patch     []byte
	PatchType types.PatchType
	// Skipped is true when the template already matches.
	Skipped bool
	// Message is kubectl's result string: "rolled back", or "skipped
	// rollback (current template already matches revision N)" with the
	// requested N (0 for "previous").
	Message string
}

// Undo is `kubectl rollout undo --to-revision=toRevision` as a pure
// function over d and its owned ReplicaSets: [SelectRollbackTarget], then
// [RollbackPatch], with kubectl's order of checks and messages.
func Undo(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, toRevision int64) (UndoResult, error) {
	target, err := SelectRollbackTarget(d, rss, toRevision)
	if err != nil {
		return UndoResult{}, err
	}
	patch, pt, skipped, err := RollbackPatch(d, target)
	if err != nil {
		return UndoResult{}, err
	}
	if skipped {
		return UndoResult{Target: target, Skipped: true,
			Message: fmt.Sprintf("skipped rollback (current template already matches revision %d)", toRevision)}, nil
	}
	return UndoResult{Target: target, Patch: patch, PatchType: pt, Message: "rolled back"}, nil
}
