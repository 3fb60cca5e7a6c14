package memcluster

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The patches below are the ones the upstream controllers and kubectl send.
func TestPatchPod(t *testing.T) {
	c, _ := newTestCluster(t)
	rs := must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("web", nil), metav1.CreateOptions{}))(t)
	p := must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	adopt := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":%q,"controller":true,"blockOwnerDeletion":true}],"uid":%q}}`, rs.UID, p.UID)
	release := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, rs.UID, p.UID)
	wrongUID := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":"not-the-pod"}}`, rs.UID)
	tests := []struct {
		name     string
		pt       types.PatchType
		patch    string
		wantRefs []types.UID
		wantErr  func(error) bool
	}{
		{name: "adopt", pt: types.StrategicMergePatchType, patch: adopt, wantRefs: []types.UID{rs.UID}},
		{name: "adopt again is idempotent", pt: types.StrategicMergePatchType, patch: adopt, wantRefs: []types.UID{rs.UID}},
		{name: "release with a wrong uid precondition", pt: types.StrategicMergePatchType, patch: wrongUID, wantRefs: []types.UID{rs.UID}, wantErr: apierrors.IsConflict},
		{name: "release", pt: types.StrategicMergePatchType, patch: release},
		{name: "stale resourceVersion", pt: types.MergePatchType, patch: `{"metadata":{"resourceVersion":"1","labels":{"x":"y"}}}`, wantErr: apierrors.IsConflict},
		{name: "bad json", pt: types.MergePatchType, patch: `{`, wantErr: apierrors.IsBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Pods("ns").Patch(ctxT(t), "p", tt.pt, []byte(tt.patch), metav1.PatchOptions{})
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Patch() error = %v", err)
			case tt.wantErr != nil && !tt.wantErr(err):
				t.Fatalf("Patch() error = %v; want another class", err)
			}
			got := must(c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{}))(t)
			var refs []types.UID
			for _, r := range got.OwnerReferences {
				refs = append(refs, r.UID)
			}
			if diff := cmp.Diff(tt.wantRefs, refs); diff != "" {
				t.Errorf("owner UIDs mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPatchDeployment(t *testing.T) {
	tests := []struct {
		name  string
		pt    types.PatchType
		patch string
		check func(d *appsv1.Deployment) string
	}{
		{
			name: "pause (merge)", pt: types.MergePatchType, patch: `{"spec":{"paused":true}}`,
			check: func(d *appsv1.Deployment) string { return line(d.Spec.Paused, d.Generation) },
		},
		{
			name: "pause (strategic)", pt: types.StrategicMergePatchType, patch: `{"spec":{"paused":true}}`,
			check: func(d *appsv1.Deployment) string { return line(d.Spec.Paused, d.Generation) },
		},
		{
			name: "restart annotation", pt: types.StrategicMergePatchType,
			patch: `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-01-01T00:00:00Z"}}}}}`,
			check: func(d *appsv1.Deployment) string {
				return line(d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"], d.Spec.Template.Labels["app"], d.Generation)
			},
		},
		{
			name: "rollback annotation removal (json patch)", pt: types.JSONPatchType,
			patch: `[{"op":"test","path":"/metadata/annotations/deprecated.deployment.rollback.to","value":"2"},` +
				`{"op":"remove","path":"/metadata/annotations/deprecated.deployment.rollback.to"}]`,
			check: func(d *appsv1.Deployment) string { return line(len(d.Annotations), d.Generation) },
		},
		{
			name: "json patch replace and add", pt: types.JSONPatchType,
			patch: `[{"op":"replace","path":"/spec/replicas","value":4},{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"side","image":"busybox"}}]`,
			check: func(d *appsv1.Deployment) string {
				return line(*d.Spec.Replicas, len(d.Spec.Template.Spec.Containers), d.Spec.Template.Spec.Containers[1].ImagePullPolicy)
			},
		},
		{
			name: "merge patch deletes with null", pt: types.MergePatchType, patch: `{"metadata":{"annotations":null}}`,
			check: func(d *appsv1.Deployment) string { return line(d.Annotations == nil, d.Generation) },
		},
		{
			name: "status is ignored on the main resource", pt: types.MergePatchType, patch: `{"status":{"replicas":7}}`,
			check: func(d *appsv1.Deployment) string { return line(d.Status.Replicas, d.Generation) },
		},
	}
	want := map[string]string{
		"pause (merge)":                            "true 2",
		"pause (strategic)":                        "true 2",
		"restart annotation":                       "2026-01-01T00:00:00Z web 2",
		"rollback annotation removal (json patch)": "0 2",
		"json patch replace and add":               "4 2 Always",
		"merge patch deletes with null":            "true 2",
		"status is ignored on the main resource":   "0 1",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCluster(t)
			d := deployment("web")
			d.Annotations = map[string]string{"deprecated.deployment.rollback.to": "2"}
			must(c.Deployments("ns").Create(ctxT(t), d, metav1.CreateOptions{}))(t)
			got := must(c.Deployments("ns").Patch(ctxT(t), "web", tt.pt, []byte(tt.patch), metav1.PatchOptions{}))(t)
			if g := tt.check(got); g != want[tt.name] {
				t.Errorf("after patch: %q; want %q", g, want[tt.name])
			}
		})
	}
}

func TestPatchErrors(t *testing.T) {
	c, _ := newTestCluster(t)
	must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{}))(t)
	tests := []struct {
		name  string
		pt    types.PatchType
		patch string
		code  int32
	}{
		{name: "failed test op", pt: types.JSONPatchType, patch: `[{"op":"test","path":"/spec/replicas","value":9}]`, code: 422},
		{name: "missing path", pt: types.JSONPatchType, patch: `[{"op":"remove","path":"/spec/nope"}]`, code: 422},
		{name: "invalid result", pt: types.MergePatchType, patch: `{"spec":{"replicas":-1}}`, code: 422},
		{name: "immutable selector", pt: types.MergePatchType, patch: `{"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}}}}}`, code: 422},
		{name: "unknown type", pt: types.ApplyPatchType, patch: `{}`, code: 415},
		{name: "missing object", pt: types.MergePatchType, patch: `{}`, code: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "web"
			if tt.code == 404 {
				name = "nope"
			}
			_, err := c.Deployments("ns").Patch(ctxT(t), name, tt.pt, []byte(tt.patch), metav1.PatchOptions{})
			var se apierrors.APIStatus
			if !asStatus(err, &se) || se.Status().Code != tt.code {
				t.Errorf("Patch() error = %v; want HTTP %d", err, tt.code)
			}
		})
	}
}

func TestPatchStatusSubresource(t *testing.T) {
	c, _ := newTestCluster(t)
	must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("web", nil), metav1.CreateOptions{}))(t)
	got := must(c.ReplicaSets("ns").Patch(ctxT(t), "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":5},"status":{"replicas":3}}`), metav1.PatchOptions{}, "status"))(t)
	if got.Status.Replicas != 3 || *got.Spec.Replicas != 1 {
		t.Errorf("status patch: status.replicas=%d spec.replicas=%d; want 3 and 1", got.Status.Replicas, *got.Spec.Replicas)
	}
}

func asStatus(err error, out *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	if ok {
		*out = s
	}
	return ok
}

// line formats values separated by spaces.
func line(v ...any) string { return strings.TrimSuffix(fmt.Sprintln(v...), "\n") }

// A patch keeps every integer it does not touch exactly, and writes the
// ones it sets exactly, as kube-apiserver does: 2^53+1 is not rounded to
// 2^53 (a float64 decode would), and MaxInt64 does not overflow.
func TestPatchKeepsLargeIntegers(t *testing.T) {
	for _, n := range []int64{1<<53 + 1, math.MaxInt64} {
		for _, pt := range []types.PatchType{types.StrategicMergePatchType, types.MergePatchType, types.JSONPatchType} {
			t.Run(fmt.Sprintf("%d/%s", n, pt), func(t *testing.T) {
				c, _ := newTestCluster(t)
				d := deployment("web")
				d.Spec.Template.Spec.TerminationGracePeriodSeconds = &n
				one := int64(1)
				d.Spec.Template.Spec.ActiveDeadlineSeconds = &one
				must(c.Deployments("ns").Create(ctxT(t), d, metav1.CreateOptions{}))(t)
				// Touch spec.replicas only; then set another field to n.
				touch, set := `{"spec":{"replicas":3}}`, fmt.Sprintf(`{"spec":{"template":{"spec":{"activeDeadlineSeconds":%d}}}}`, n)
				if pt == types.JSONPatchType {
					touch = `[{"op":"replace","path":"/spec/replicas","value":3}]`
					set = fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/activeDeadlineSeconds","value":%d}]`, n)
				}
				must(c.Deployments("ns").Patch(ctxT(t), "web", pt, []byte(touch), metav1.PatchOptions{}))(t)
				got := must(c.Deployments("ns").Patch(ctxT(t), "web", pt, []byte(set), metav1.PatchOptions{}))(t)
				spec := got.Spec.Template.Spec
				if *got.Spec.Replicas != 3 || *spec.TerminationGracePeriodSeconds != n || *spec.ActiveDeadlineSeconds != n {
					t.Errorf("after patches: replicas=%d terminationGracePeriodSeconds=%d activeDeadlineSeconds=%d; want 3, %d, %d",
						*got.Spec.Replicas, *spec.TerminationGracePeriodSeconds, *spec.ActiveDeadlineSeconds, n, n)
				}
			})
		}
	}
}

// A JSON patch "copy" copies: changing the source afterwards leaves the
// copy alone (RFC 6902 4.5).
func TestJSONPatchCopyIsACopy(t *testing.T) {
	doc := []byte(`{"a":{"l":{"x":"1"}},"n":[1]}`)
	out, err := jsonPatch(doc, []byte(`[{"op":"copy","from":"/a","path":"/b"},{"op":"add","path":"/a/l/y","value":"2"},`+
		`{"op":"copy","from":"/n","path":"/m"},{"op":"replace","path":"/n/0","value":5}]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"l":{"x":"1","y":"2"}},"b":{"l":{"x":"1"}},"m":[1],"n":[5]}`; string(out) != want {
		t.Errorf("jsonPatch = %s; want %s", out, want)
	}
}

// JSON patches have kube-apiserver's limits: 10,000 operations, and 3 MiB
// copied in total (without it, a few dozen "copy" operations that each
// double the document exhaust memory).
func TestJSONPatchLimits(t *testing.T) {
	doc := []byte(fmt.Sprintf(`{"a":%q}`, strings.Repeat("x", 1<<20)))
	copyOp := `{"op":"copy","from":"/a","path":"/b%d"}`
	var ops []string
	for i := range 3 {
		ops = append(ops, fmt.Sprintf(copyOp, i))
	}
	if _, err := jsonPatch(doc, []byte("["+strings.Join(ops[:2], ",")+"]")); err != nil {
		t.Errorf("copying 2 MiB: %v", err)
	}
	_, err := jsonPatch(doc, []byte("["+strings.Join(ops, ",")+"]"))
	if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Code != 422 {
		t.Errorf("copying 3 MiB + 3 bytes: error %v; want a 422 (kube-apiserver's answer, whose text does not say why)", err)
	}
	many := "[" + strings.Repeat(`{"op":"test","path":"/a","value":"x"},`, maxJSONPatchOperations) + `{"op":"remove","path":"/a"}]`
	if _, err := jsonPatch(doc, []byte(many)); !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("%d operations: error %v; want 413", maxJSONPatchOperations+1, err)
	}
}
