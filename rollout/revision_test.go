package rollout

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestRevision(t *testing.T) {
	type result struct {
		Rev int64
		Err bool
	}
	tests := []struct {
		name string
		rs   *appsv1.ReplicaSet
		want result
	}{
		{"missing is 0", rs("a", 0, 1), result{0, false}},
		{"parsed", rs("a", 0, 1, rev("42")), result{42, false}},
		{"garbage", rs("a", 0, 1, rev("4x")), result{0, true}},
		{"empty string is an error", rs("a", 0, 1, rev("")), result{0, true}},
		{"nil", nil, result{0, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Revision(tc.rs)
			if diff := cmp.Diff(tc.want, result{v, err != nil}); diff != "" {
				t.Errorf("Revision mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if v, err := Revision(&appsv1.Deployment{}); v != 0 || err != nil {
		t.Errorf("Revision(empty Deployment) = %d, %v", v, err)
	}
	if _, err := Revision((*appsv1.Deployment)(nil)); err == nil {
		t.Error("Revision(nil Deployment) should fail")
	}
}

func TestMaxAndLastRevision(t *testing.T) {
	type result struct {
		Max, Last int64
		Err       string
	}
	tests := []struct {
		name string
		rss  []*appsv1.ReplicaSet
		want result
	}{
		{"empty", nil, result{0, 0, ""}},
		{"ordered", []*appsv1.ReplicaSet{rs("a", 0, 0, rev("1")), rs("b", 0, 0, rev("3")), rs("c", 0, 0, rev("2"))}, result{3, 2, ""}},
		{"duplicated max is also last", []*appsv1.ReplicaSet{rs("a", 0, 0, rev("3")), rs("b", 0, 0, rev("3")), rs("c", 0, 0, rev("2"))}, result{3, 3, ""}},
		{"unparseable skipped, reported", []*appsv1.ReplicaSet{rs("a", 0, 0, rev("9x")), rs("b", 0, 0, rev("2")), nil}, result{2, 0, "ignored"}},
		{"unannotated counts as 0", []*appsv1.ReplicaSet{rs("a", 0, 0), rs("b", 0, 0, rev("5"))}, result{5, 0, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err1 := MaxRevision(tc.rss)
			l, err2 := LastRevision(tc.rss)
			if errKind(err1) != errKind(err2) {
				t.Errorf("errors differ: %v / %v", err1, err2)
			}
			if diff := cmp.Diff(tc.want, result{m, l, errKind(err1)}); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetDeploymentRevisionAndRollbackTo(t *testing.T) {
	d := deploy(1, "1", "0")
	got, changed := SetDeploymentRevision(d, "3")
	if !changed || got.Annotations[RevisionAnnotation] != "3" || d.Annotations != nil {
		t.Errorf("SetDeploymentRevision = %v, %v (input annotations %v)", got.Annotations, changed, d.Annotations)
	}
	if _, changed := SetDeploymentRevision(got, "3"); changed {
		t.Error("same revision reported as a change")
	}
	type result struct {
		Rev     int64
		OK      bool
		ErrKind string
	}
	for _, tc := range []struct {
		value string
		want  result
	}{
		{"", result{0, false, ""}},
		{"0", result{0, true, ""}},
		{"7", result{7, true, ""}},
		{"seven", result{0, false, "ignored"}},
	} {
		dd := d.DeepCopy()
		if tc.value != "" {
			dd.Annotations = map[string]string{RollbackToAnnotation: tc.value}
		}
		r, ok, err := RollbackTo(dd)
		if diff := cmp.Diff(tc.want, result{r, ok, errKind(err)}); diff != "" {
			t.Errorf("RollbackTo(%q) mismatch (-want +got):\n%s", tc.value, diff)
		}
	}
}

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	d := deploy(10, "3", "2")
	d.Annotations = map[string]string{
		"team": "a", ChangeCauseAnnotation: "edit",
		RevisionAnnotation: "99", corev1.LastAppliedConfigAnnotation: "{}", RollbackToAnnotation: "1",
	}
	longHistory := strings.Repeat("1234,", 399) + "1234" // 1999 chars
	type result struct {
		Annotations map[string]string
		Changed     bool
		Err         string
	}
	tests := []struct {
		name        string
		rs          *appsv1.ReplicaSet
		newRevision string
		exists      bool
		limit       int
		want        result
	}{
		{
			name: "new ReplicaSet: copied, revision, replicas annotations",
			rs:   rs("n", 0, 0), newRevision: "4", exists: false, limit: 2000,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit", RevisionAnnotation: "4",
				DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "13"}, true, ""},
		},
		{
			name: "existing, up to date",
			rs:   rs("n", 0, 0, ann("team", "a"), ann(ChangeCauseAnnotation, "edit"), rev("4")), newRevision: "4", exists: true, limit: 2000,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit", RevisionAnnotation: "4"}, false, ""},
		},
		{
			name: "higher revision is kept",
			rs:   rs("n", 0, 0, ann("team", "a"), ann(ChangeCauseAnnotation, "edit"), rev("7")), newRevision: "4", exists: true, limit: 2000,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit", RevisionAnnotation: "7"}, false, ""},
		},
		{
			name: "rollback: old revision goes to history",
			rs:   rs("n", 0, 0, ann("team", "a"), ann(ChangeCauseAnnotation, "edit"), rev("2"), ann(RevisionHistoryAnnotation, "1")), newRevision: "5", exists: true, limit: 2000,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit", RevisionAnnotation: "5", RevisionHistoryAnnotation: "1,2"}, true, ""},
		},
		{
			name: "history trimmed from the front to fit",
			rs:   rs("n", 0, 0, ann("team", "a"), ann(ChangeCauseAnnotation, "edit"), rev("2"), ann(RevisionHistoryAnnotation, "10,11,12")), newRevision: "5", exists: true, limit: 8,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit", RevisionAnnotation: "5", RevisionHistoryAnnotation: "11,12,2"}, true, ""},
		},
		{
			name: "history at 2000 characters drops its oldest entry",
			rs:   rs("n", 0, 0, ann("team", "a"), ann(ChangeCauseAnnotation, "edit"), rev("2"), ann(RevisionHistoryAnnotation, longHistory)), newRevision: "5", exists: true, limit: MaxRevisionHistoryLength,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit", RevisionAnnotation: "5", RevisionHistoryAnnotation: longHistory[5:] + ",2"}, true, ""},
		},
		{
			name: "history that cannot fit is left alone",
			rs:   rs("n", 0, 0, ann("team", "a"), ann(ChangeCauseAnnotation, "edit"), rev("123456"), ann(RevisionHistoryAnnotation, "1")), newRevision: "234567", exists: true, limit: 3,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit", RevisionAnnotation: "234567", RevisionHistoryAnnotation: "1"}, true, ""},
		},
		{
			name: "garbage old revision: copied annotations kept, no change reported",
			rs:   rs("n", 0, 0, rev("x")), newRevision: "5", exists: true, limit: 2000,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit", RevisionAnnotation: "x"}, false, "ignored"},
		},
		{
			name: "garbage new revision",
			rs:   rs("n", 0, 0), newRevision: "five", exists: true, limit: 2000,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit"}, false, "ignored"},
		},
		{
			name: "empty revision annotation counts as 0 and pushes an empty entry",
			rs:   rs("n", 0, 0, ann("team", "a"), ann(ChangeCauseAnnotation, "edit"), rev("")), newRevision: "1", exists: true, limit: 2000,
			want: result{map[string]string{"team": "a", ChangeCauseAnnotation: "edit", RevisionAnnotation: "1", RevisionHistoryAnnotation: ""}, true, ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, dBefore := tc.rs.DeepCopy(), d.DeepCopy()
			out, changed, err := SetNewReplicaSetAnnotations(d, tc.rs, tc.newRevision, tc.exists, tc.limit)
			if diff := cmp.Diff(tc.want, result{out.Annotations, changed, errKind(err)}); diff != "" {
				t.Errorf("SetNewReplicaSetAnnotations mismatch (-want +got):\n%s (err %v)", diff, err)
			}
			unchanged(t, "rs", before, tc.rs)
			unchanged(t, "deployment", dBefore, d)
		})
	}
	if len(longHistory) != 1999 {
		t.Fatalf("fixture length %d", len(longHistory))
	}
}

func TestCopyAndRollbackAnnotations(t *testing.T) {
	d := deploy(1, "1", "0")
	d.Annotations = map[string]string{"a": "1", "b": "2", RevisionAnnotation: "3", corev1.LastAppliedConfigAnnotation: "{}"}
	r := rs("r", 0, 1, ann("b", "old"), ann("keep", "x"), rev("1"), replicasAnn(1, 2))

	got, changed := copyDeploymentAnnotations(d, r)
	want := map[string]string{"a": "1", "b": "2", "keep": "x", RevisionAnnotation: "1", DesiredReplicasAnnotation: "1", MaxReplicasAnnotation: "2"}
	if diff := cmp.Diff(want, got.Annotations); diff != "" || !changed {
		t.Errorf("copyDeploymentAnnotations changed=%v, mismatch (-want +got):\n%s", changed, diff)
	}
	if _, changed := copyDeploymentAnnotations(d, got); changed {
		t.Error("second copy reported a change")
	}
	if got, changed := copyDeploymentAnnotations(&appsv1.Deployment{}, rs("e", 0, 1)); changed || got.Annotations == nil {
		t.Errorf("empty copy: changed=%v annotations=%v; want false, non-nil map", changed, got.Annotations)
	}

	back := SetDeploymentAnnotationsTo(d, r)
	wantBack := map[string]string{RevisionAnnotation: "3", corev1.LastAppliedConfigAnnotation: "{}", "b": "old", "keep": "x"}
	if diff := cmp.Diff(wantBack, back.Annotations); diff != "" {
		t.Errorf("SetDeploymentAnnotationsTo mismatch (-want +got):\n%s", diff)
	}
	if d.Annotations["a"] != "1" {
		t.Error("SetDeploymentAnnotationsTo mutated d")
	}
}

func TestReplicasAnnotations(t *testing.T) {
	r := rs("r", 0, 1)
	if !ReplicasAnnotationsNeedUpdate(r, 3, 4) || !ReplicasAnnotationsNeedUpdate(nil, 3, 4) {
		t.Error("a ReplicaSet without annotations needs an update")
	}
	out, changed := SetReplicasAnnotations(r, 3, 4)
	if !changed || ReplicasAnnotationsNeedUpdate(out, 3, 4) || r.Annotations != nil {
		t.Errorf("SetReplicasAnnotations: changed=%v out=%v input=%v", changed, out.Annotations, r.Annotations)
	}
	if _, changed := SetReplicasAnnotations(out, 3, 4); changed {
		t.Error("no-op reported as change")
	}
	if !ReplicasAnnotationsNeedUpdate(out, 3, 5) || !ReplicasAnnotationsNeedUpdate(out, -3, 4) {
		t.Error("differences not noticed")
	}

	type result struct {
		N       int32
		OK      bool
		ErrKind string
	}
	for _, tc := range []struct {
		value string
		want  result
	}{
		{"5", result{5, true, ""}},
		{"2147483647", result{2147483647, true, ""}},
		{"2147483648", result{0, false, "ignored"}},
		{"4294967296", result{0, false, "ignored"}},
		{"-1", result{0, false, "ignored"}},
		{"+1", result{0, false, "ignored"}},
		{"x", result{0, false, "ignored"}},
	} {
		r := rs("r", 0, 1, ann(DesiredReplicasAnnotation, tc.value), ann(MaxReplicasAnnotation, tc.value))
		n, ok, err := AnnotatedDesiredReplicas(r)
		m, ok2, err2 := annotatedMaxReplicas(r)
		if diff := cmp.Diff(tc.want, result{n, ok, errKind(err)}); diff != "" || n != m || ok != ok2 || errKind(err2) != errKind(err) {
			t.Errorf("AnnotatedDesiredReplicas(%q) mismatch (-want +got):\n%s", tc.value, diff)
		}
	}
	if _, ok, err := AnnotatedDesiredReplicas(rs("r", 0, 1)); ok || err != nil {
		t.Error("missing annotation should be (0, false, nil)")
	}
}
