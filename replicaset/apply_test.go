package replicaset_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

func TestApply(t *testing.T) {
	gone := newPod("gone")
	cases := []struct {
		name       string
		rs         *appsv1.ReplicaSet
		seed       []*corev1.Pod
		plan       replicaset.Plan
		want       replicaset.PodWrites
		wantPods   []string // the names of PodWrites.CreatedPods, sorted
		wantErr    error
		wantCalls  int
		wantEvents []string
	}{{
		name:       "creates in batches",
		rs:         newRS("web", 3),
		plan:       replicaset.Plan{Actions: []replicaset.Action{replicaset.CreatePods{Count: 3}}},
		want:       replicaset.PodWrites{Created: 3},
		wantPods:   []string{"web-p001", "web-p002", "web-p003"},
		wantCalls:  3,
		wantEvents: []string{"Normal SuccessfulCreate Created pod: web-p001", "Normal SuccessfulCreate Created pod: web-p002", "Normal SuccessfulCreate Created pod: web-p003"},
	}, {
		name: "a template without labels fails before any call",
		rs: newRS("web", 3, func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Labels = nil
		}),
		plan:    replicaset.Plan{Actions: []replicaset.Action{replicaset.CreatePods{Count: 3}}},
		want:    replicaset.PodWrites{CreatesSkipped: 3},
		wantErr: replicaset.ErrNoLabels,
	}, {
		name:       "deleting a vanished pod is not an error",
		rs:         newRS("web", 0),
		seed:       []*corev1.Pod{newPod("here")},
		plan:       replicaset.Plan{Actions: []replicaset.Action{replicaset.DeletePods{Pods: []*corev1.Pod{gone, newPod("here")}}}},
		want:       replicaset.PodWrites{Deleted: 1, DeletesFailed: []types.UID{"uid-gone"}},
		wantEvents: []string{"Normal SuccessfulDelete Deleted pod: here"},
	}, {
		name:       "events are recorded",
		rs:         newRS("web", 0),
		plan:       replicaset.Plan{Actions: []replicaset.Action{replicaset.Event{Type: corev1.EventTypeWarning, Reason: "R", Message: "m"}}},
		wantEvents: []string{"Warning R m"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t0)
			for _, p := range tc.seed {
				w.addPod(p)
			}
			got, err := replicaset.WritePods(context.Background(), w, w, tc.rs, tc.plan)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("WritePods error = %v; want %v", err, tc.wantErr)
			}
			var created []string
			for _, p := range got.CreatedPods {
				created = append(created, p.Name)
			}
			if diff := cmp.Diff(tc.wantPods, sortedCopy(created)); diff != "" {
				t.Errorf("PodWrites.CreatedPods mismatch (-want +got):\n%s", diff)
			}
			got.CreatedPods = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("WritePods mismatch (-want +got):\n%s", diff)
			}
			if w.creates != tc.wantCalls {
				t.Errorf("create calls = %d; want %d", w.creates, tc.wantCalls)
			}
			if diff := cmp.Diff(tc.wantEvents, sortedCopy(w.takeEvents())); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
