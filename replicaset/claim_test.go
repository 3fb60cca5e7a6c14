package replicaset_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

func TestClaimVerdict(t *testing.T) {
	rs := newRS("web", 1)
	other := newRS("other", 1)
	deleting := newRS("web", 1, func(rs *appsv1.ReplicaSet) { rs.DeletionTimestamp = &metav1.Time{Time: t0} })
	clusterScoped := newRS("web", 1, func(rs *appsv1.ReplicaSet) { rs.Namespace = "" })
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	match := withLabels(map[string]string{"app": "web"})
	nomatch := withLabels(map[string]string{"app": "db"})
	otherNS := func(p *corev1.Pod) { p.Namespace = "elsewhere" }

	cases := []struct {
		name string
		rs   *appsv1.ReplicaSet
		pod  *corev1.Pod
		want replicaset.Verdict
	}{
		{name: "owned by someone else", rs: rs, pod: newPod("p", ownedBy(other), match), want: replicaset.Ignore},
		{name: "ours and matching", rs: rs, pod: newPod("p", ownedBy(rs)), want: replicaset.Own},
		{name: "ours and matching while we are deleted", rs: deleting, pod: newPod("p", ownedBy(rs)), want: replicaset.Own},
		{name: "ours, not matching", rs: rs, pod: newPod("p", ownedBy(rs), nomatch), want: replicaset.Release},
		{name: "ours, not matching, we are deleted", rs: deleting, pod: newPod("p", ownedBy(rs), nomatch), want: replicaset.Ignore},
		{name: "orphan matching", rs: rs, pod: newPod("p", match), want: replicaset.Adopt},
		{name: "orphan not matching", rs: rs, pod: newPod("p", nomatch), want: replicaset.Ignore},
		{name: "orphan while we are deleted", rs: deleting, pod: newPod("p", match), want: replicaset.Ignore},
		{name: "orphan being deleted", rs: rs, pod: newPod("p", match, deletingAt(t0)), want: replicaset.Ignore},
		{name: "orphan in another namespace", rs: rs, pod: newPod("p", match, otherNS), want: replicaset.Ignore},
		{name: "cluster-scoped owner adopts across namespaces", rs: clusterScoped, pod: newPod("p", match, otherNS), want: replicaset.Adopt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := replicaset.ClaimVerdict(tc.rs, sel, tc.pod); got != tc.want {
				t.Errorf("ClaimVerdict = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestClaimPods(t *testing.T) {
	rs := newRS("web", 1)
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	match := withLabels(map[string]string{"app": "web"})
	pods := []*corev1.Pod{
		newPod("orphan", match),
		newPod("mine", ownedBy(rs)),
		newPod("strayed", ownedBy(rs), withLabels(map[string]string{"app": "db"})),
		newPod("orphan-failed", match, inPhase(corev1.PodFailed)),
		newPod("mine-succeeded-strayed", ownedBy(rs), withLabels(nil), inPhase(corev1.PodSucceeded)),
		newPod("orphan-terminating", match, deletingAt(t0)),
		newPod("theirs", ownedBy(newRS("x", 1)), match),
	}
	type claim struct{ Pod, Verdict string }
	var got []claim
	claims, err := replicaset.ClaimPods(rs, sel, pods)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		got = append(got, claim{c.Pod.Name, c.Verdict.String()})
	}
	want := []claim{{"orphan", "adopt"}, {"mine", "own"}, {"strayed", "release"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ClaimPods mismatch (-want +got):\n%s", diff)
	}
}

func TestPatches(t *testing.T) {
	rs := newRS("web", 1)
	pod := newPod("p")
	adopt, err := replicaset.AdoptPatch(rs, pod)
	if err != nil {
		t.Fatal(err)
	}
	wantAdopt := `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs-web","controller":true,"blockOwnerDeletion":true}],"uid":"uid-p"}}`
	if diff := cmp.Diff(wantAdopt, string(adopt)); diff != "" {
		t.Errorf("AdoptPatch mismatch (-want +got):\n%s", diff)
	}
	release, err := replicaset.ReleasePatch(rs, pod)
	if err != nil {
		t.Fatal(err)
	}
	wantRelease := `{"metadata":{"uid":"uid-p","ownerReferences":[{"$patch":"delete","uid":"rs-web"}]}}`
	if diff := cmp.Diff(wantRelease, string(release)); diff != "" {
		t.Errorf("ReleasePatch mismatch (-want +got):\n%s", diff)
	}
}

func TestIsOwnedOrOrphan(t *testing.T) {
	rs := newRS("web", 1)
	renamed := newRS("web2", 1, func(r *appsv1.ReplicaSet) { r.UID = rs.UID })
	cases := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "owned", pod: newPod("p", ownedBy(rs)), want: true},
		{name: "orphan", pod: newPod("p"), want: true},
		{name: "orphan elsewhere", pod: newPod("p", func(p *corev1.Pod) { p.Namespace = "x" })},
		{name: "owned by another", pod: newPod("p", ownedBy(newRS("x", 1)))},
		{name: "same UID, other name", pod: newPod("p", ownedBy(renamed))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := replicaset.IsOwnedOrOrphan(rs, tc.pod); got != tc.want {
				t.Errorf("IsOwnedOrOrphan = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestPodReplicaSets(t *testing.T) {
	web := newRS("web", 1)
	web.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	empty := newRS("empty", 1, func(r *appsv1.ReplicaSet) { r.Spec.Selector = &metav1.LabelSelector{} })
	bad := newRS("bad", 1, func(r *appsv1.ReplicaSet) {
		r.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	})
	elsewhere := newRS("elsewhere", 1, func(r *appsv1.ReplicaSet) {
		r.Namespace = "x"
		r.Spec.Selector = web.Spec.Selector
	})
	rss := []*appsv1.ReplicaSet{web, empty, bad, elsewhere}
	var got []string
	for _, rs := range replicaset.PodReplicaSets(newPod("p"), rss) {
		got = append(got, rs.Name)
	}
	if diff := cmp.Diff([]string{"web"}, got); diff != "" {
		t.Errorf("PodReplicaSets mismatch (-want +got):\n%s", diff)
	}
	if got := replicaset.PodReplicaSets(newPod("p", withLabels(nil)), rss); got != nil {
		t.Errorf("PodReplicaSets(no labels) = %v; want nil", got)
	}
}
