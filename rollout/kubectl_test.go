package rollout

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestStatus(t *testing.T) {
	mk := func(gen, observed int64, st appsv1.DeploymentStatus) *appsv1.Deployment {
		d := deploy(3, "1", "0")
		d.Generation = gen
		st.ObservedGeneration = observed
		d.Status = st
		d.Annotations = map[string]string{RevisionAnnotation: "4"}
		return d
	}
	deadline := mk(2, 2, appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
		cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded, "", t0, t0)}})
	nilReplicas := mk(1, 1, appsv1.DeploymentStatus{Replicas: 0, UpdatedReplicas: 0})
	nilReplicas.Spec.Replicas = nil
	badRev := mk(1, 1, appsv1.DeploymentStatus{})
	badRev.Annotations[RevisionAnnotation] = "x"
	type result struct {
		Res StatusResult
		Err string
	}
	tests := []struct {
		name     string
		d        *appsv1.Deployment
		revision int64
		want     result
	}{
		{"spec not observed", mk(2, 1, appsv1.DeploymentStatus{}), 0,
			result{Res: StatusResult{"Waiting for deployment spec update to be observed...\n", false, StatusWaitingGeneration}}},
		{"updating", mk(1, 1, appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1}), 0,
			result{Res: StatusResult{"Waiting for deployment \"web\" rollout to finish: 1 out of 3 new replicas have been updated...\n", false, StatusUpdating}}},
		{"old pending termination", mk(1, 1, appsv1.DeploymentStatus{Replicas: 5, UpdatedReplicas: 3}), 0,
			result{Res: StatusResult{"Waiting for deployment \"web\" rollout to finish: 2 old replicas are pending termination...\n", false, StatusTerminatingOld}}},
		{"waiting for availability", mk(1, 1, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 1}), 0,
			result{Res: StatusResult{"Waiting for deployment \"web\" rollout to finish: 1 of 3 updated replicas are available...\n", false, StatusWaitingAvailable}}},
		{"done", mk(1, 1, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}), 4,
			result{Res: StatusResult{"deployment \"web\" successfully rolled out\n", true, StatusComplete}}},
		{"nil replicas skips the updated check", nilReplicas, 0,
			result{Res: StatusResult{"deployment \"web\" successfully rolled out\n", true, StatusComplete}}},
		{"deadline exceeded", deadline, 0,
			result{Res: StatusResult{Reason: StatusDeadlineExceeded}, Err: "deployment \"web\" exceeded its progress deadline"}},
		{"revision mismatch", mk(1, 1, appsv1.DeploymentStatus{}), 3,
			result{Res: StatusResult{Reason: StatusRevisionMismatch}, Err: "desired revision (3) is different from the running revision (4)"}},
		{"nil deployment is an error, not a success", nil, 0,
			result{Err: "rollout: Status: the Deployment is nil"}},
		{"unparseable revision", badRev, 3,
			result{Res: StatusResult{Reason: StatusRevisionMismatch}, Err: "cannot get the revision of deployment \"web\": strconv.ParseInt: parsing \"x\": invalid syntax"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Status(tc.d, tc.revision)
			got := result{Res: res}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Status mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistory(t *testing.T) {
	d := deploy(3, "1", "0")
	withCauseTpl := rs("t", 2, 0, rev("2"), func(r *appsv1.ReplicaSet) {
		r.Spec.Template.Annotations = map[string]string{ChangeCauseAnnotation: "from template"}
	})
	rss := []*appsv1.ReplicaSet{
		rs("newrs", 5, 3, tpl("v2"), rev("5"), ann(ChangeCauseAnnotation, "image v2"), ann(RevisionHistoryAnnotation, "1,3")),
		rs("a", 0, 0, rev("4"), ann(ChangeCauseAnnotation, "first")),
		rs("dup-later", 3, 0, rev("4"), ann(ChangeCauseAnnotation, "second")),
		withCauseTpl,
		rs("bad", 1, 0, rev("nope")),
	}
	before := cloneAll(rss)
	entries, err := History(d, rss)
	if errKind(err) != "ignored" {
		t.Errorf("History err = %v; want the unparseable revision reported", err)
	}
	type row struct {
		Rev     int64
		Cause   string
		RS      string
		Aliases []int64
	}
	var got []row
	for _, e := range entries {
		got = append(got, row{e.Revision, e.ChangeCause, e.ReplicaSet.Name, e.Aliases})
	}
	want := []row{{2, "from template", "t", nil}, {4, "second", "dup-later", nil}, {5, "image v2", "newrs", []int64{1, 3}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("History mismatch (-want +got):\n%s", diff)
	}
	if e, err := HistoryRevision(entries, 5); err != nil || e.Template.Annotations[ChangeCauseAnnotation] != "image v2" {
		t.Errorf("HistoryRevision(5) = %v, %v", e, err)
	}
	if _, err := HistoryRevision(entries, 9); err == nil || err.Error() != "unable to find the specified revision" {
		t.Errorf("HistoryRevision(9) err = %v", err)
	}
	unchanged(t, "rss", before, rss)
	other := rs("other", 0, 1)
	other.OwnerReferences[0].UID = "nope"
	if got := names(OwnedReplicaSets(d, append(cloneAll(rss), other, nil))); len(got) != len(rss) {
		t.Errorf("OwnedReplicaSets = %v", got)
	}
}

func TestUndo(t *testing.T) {
	d := deploy(3, "1", "0")
	d.Annotations = map[string]string{RevisionAnnotation: "3", "team": "x", corev1.LastAppliedConfigAnnotation: "{}"}
	v1 := rs("v1", 0, 0, rev("1"), ann(ChangeCauseAnnotation, "one"), ann(RevisionAnnotation, "1"))
	v1.Spec.Template.Labels[HashLabel] = "h1"
	v1b := rs("v1b", 1, 0, rev("2"), tpl("v1b"))
	cur := rs("cur", 2, 3, tpl("v2"), rev("3"))
	rss := []*appsv1.ReplicaSet{cur, v1, v1b}

	type result struct {
		Target  string
		Skipped bool
		Message string
		Err     string
	}
	paused := d.DeepCopy()
	paused.Spec.Paused = true
	tests := []struct {
		name string
		d    *appsv1.Deployment
		rss  []*appsv1.ReplicaSet
		to   int64
		want result
	}{
		{"previous", d, rss, 0, result{Target: "v1b", Message: "rolled back"}},
		{"explicit", d, rss, 1, result{Target: "v1", Message: "rolled back"}},
		{"current template: skipped", d, rss, 3, result{Target: "cur", Skipped: true, Message: "skipped rollback (current template already matches revision 3)"}},
		{"missing revision", d, rss, 9, result{Err: "unable to find specified revision 9 in history"}},
		{"negative revision", d, rss, -1, result{Err: "unable to find specified revision -1 in history"}},
		{"no history", d, []*appsv1.ReplicaSet{cur}, 0, result{Err: `no rollout history found for deployment "web"`}},
		{"paused", paused, rss, 0, result{Err: ErrPausedRollback.Error()}},
		{"tie with the max: the later one is previous", d, []*appsv1.ReplicaSet{cur, rs("x", 1, 0, rev("3"))}, 0,
			result{Target: "cur", Skipped: true, Message: "skipped rollback (current template already matches revision 0)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Undo(tc.d, tc.rss, tc.to)
			got := result{Target: name(res.Target), Skipped: res.Skipped, Message: res.Message}
			if res.Target == nil {
				got.Target = ""
			}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Undo mismatch (-want +got):\n%s", diff)
			}
		})
	}

	patch, pt, skipped, err := RollbackPatch(d, v1)
	if err != nil || skipped || pt != types.JSONPatchType {
		t.Fatalf("RollbackPatch = %s, %q, %v, %v", patch, pt, skipped, err)
	}
	want := `[{"op":"replace","path":"/spec/template","value":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"web:v1","resources":{}}]}}},` +
		`{"op":"replace","path":"/metadata/annotations","value":{"deployment.kubernetes.io/revision":"3","kubectl.kubernetes.io/last-applied-configuration":"{}","kubernetes.io/change-cause":"one"}}]`
	if diff := cmp.Diff(want, string(patch)); diff != "" {
		t.Errorf("RollbackPatch mismatch (-want +got):\n%s", diff)
	}
	if v1.Spec.Template.Labels[HashLabel] != "h1" {
		t.Error("RollbackPatch mutated the target")
	}
}

// The expected patches below were produced with apimachinery's
// strategicpatch.CreateTwoWayMergePatch over the Deployment JSON before and
// after kubectl's mutation, as kubectl computes them (not a dependency of
// this module).
func TestPatches(t *testing.T) {
	d := deploy(3, "1", "0")
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.FixedZone("EEST", 3*3600))

	restart, pt, err := RestartPatch(d, now)
	if err != nil || pt != types.StrategicMergePatchType {
		t.Fatalf("RestartPatch: %v %q", err, pt)
	}
	if want := `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2024-05-01T12:00:00+03:00"}}}}}`; string(restart) != want {
		t.Errorf("RestartPatch = %s; want %s", restart, want)
	}
	again := d.DeepCopy()
	again.Spec.Template.Annotations = map[string]string{RestartedAtAnnotation: now.Format(time.RFC3339), "x": "y"}
	if _, _, err := RestartPatch(again, now); err == nil || err.Error() != "failed to create patch for web: if restart has already been triggered within the past second, please wait before attempting to trigger another" {
		t.Errorf("same-second restart err = %v", err)
	}
	if p, _, err := RestartPatch(again, now.Add(time.Second)); err != nil || string(p) != `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2024-05-01T12:00:01+03:00"}}}}}` {
		t.Errorf("second restart = %s, %v", p, err)
	}

	pause, _, err := PausePatch(d)
	if err != nil || string(pause) != `{"spec":{"paused":true}}` {
		t.Errorf("PausePatch = %s, %v", pause, err)
	}
	paused := d.DeepCopy()
	paused.Spec.Paused = true
	resume, _, err := ResumePatch(paused)
	if err != nil || string(resume) != `{"spec":{"paused":null}}` {
		t.Errorf("ResumePatch = %s, %v", resume, err)
	}
	if _, _, err := PausePatch(paused); err == nil || err.Error() != `deployments.apps "web" is already paused` {
		t.Errorf("PausePatch(paused) err = %v", err)
	}
	if _, _, err := ResumePatch(d); err == nil || err.Error() != `deployments.apps "web" is not paused` {
		t.Errorf("ResumePatch(running) err = %v", err)
	}
	if _, _, err := RestartPatch(paused, now); !errors.Is(err, ErrPausedRestart) {
		t.Errorf("RestartPatch(paused) err = %v", err)
	}
}
