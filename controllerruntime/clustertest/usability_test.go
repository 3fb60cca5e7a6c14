package clustertest_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// settingsScenario updates a ConfigMap a hundred times through the test's
// own client, without retrying on a conflict (as a test that is the only
// writer of its object may).
func settingsScenario(t testing.TB, c *clustertest.Cluster) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"n": "0"}}
	if err := c.Client().Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 100; i++ {
		cm.Data["n"] = strconv.Itoa(i)
		if err := c.Client().Update(t.Context(), cm); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
}

// TestExploreLeavesTheTestsOwnClientAlone: every perturbation on, the
// test's own updates meet no other writer; with PerturbTestClient they
// do, and the failure of the scenario says what hit it.
func TestExploreLeavesTheTestsOwnClientAlone(t *testing.T) {
	opts := clustertest.ExploreOptions{
		Options: clustertest.Options{Disable: clustertest.AllControllers, Perturb: clustertest.AllPerturbations},
		Seeds:   10,
	}
	if v := clustertest.Explore(t, opts, settingsScenario); v != nil {
		t.Fatalf("the test's own client was perturbed: %s", v.Message)
	}
	opts.Options.PerturbTestClient, opts.ExpectViolation = true, true
	opts.Logf = func(string, ...any) {}
	v := clustertest.Explore(t, opts, settingsScenario)
	if v == nil {
		t.FailNow()
	}
	for _, want := range []string{"Conflict", "PerturbConflict had other-writer change configmaps default/settings just before the test's own update configmaps default/settings by client",
		"Options.PerturbTestClient", "RetryOnConflict"} {
		if v.Property != "scenario" || !strings.Contains(v.Message, want) {
			t.Errorf("violated %q: %s\nwant it to say %q", v.Property, v.Message, want)
		}
	}
}

// TestShrinkFollowsWhatChoicesActedOn: a schedule of twenty choices
// shrinks to the one that matters. Replayed by number, most of the others
// seemed to matter too: without one of them the bench takes another
// number of steps, and the conflict that matters lands on another
// request. One readable line per choice tells what it did.
func TestShrinkFollowsWhatChoicesActedOn(t *testing.T) {
	opts := observeOptions(t)
	opts.Options.Perturb = clustertest.AllPerturbations
	// What Explore found at seed 19 (TestExploreFindsADroppedConflict with
	// every perturbation).
	const found = "1:3,2:2,3:3,4:1,5:2,6:2,7:1,11:1,12:1,13:1,20:1,21:1,22:1,26:conflict0,26:1,30:1,31:1,32:1,36:conflict0,36:1"
	s, err := clustertest.ParseSchedule(found)
	if err != nil {
		t.Fatal(err)
	}
	v := clustertest.Shrink(t, opts, observeScenario(true), 19, s)
	if v == nil {
		t.Fatalf("seed 19 with %s breaks no property any longer: the bench's steps moved; explore again (observeScenario(true), every perturbation) and keep a schedule it finds", found)
	}
	if v.Property != statusObserved.Name {
		t.Fatalf("violated %q (%s)", v.Property, v.Message)
	}
	if len(v.Schedule) != 1 || v.Schedule[0].Perturb != clustertest.PerturbConflict {
		t.Errorf("shrunk to %q, want the one conflict", v.Schedule)
	}
	if len(v.Steps) != len(v.Schedule) {
		t.Fatalf("%d lines for %d choices: %q", len(v.Steps), len(v.Schedule), v.Steps)
	}
	for i, line := range v.Steps {
		want := fmt.Sprintf("step %d: other-writer changes apps default/app-1 just before update/status apps default/app-1 by manager", v.Schedule[i].Step)
		if line != want {
			t.Errorf("line %d = %q; want %q", i, line, want)
		}
	}
	r := observeOptions(t)
	r.Options.Perturb = clustertest.AllPerturbations
	r.Replay, r.ExpectViolation, r.Logf = v.Replay, true, func(string, ...any) {}
	if w := clustertest.Explore(t, r, observeScenario(true)); w == nil || w.Message != v.Message {
		t.Errorf("the replay of %s did not break %q again", v.Replay, v.Property)
	}
}

func TestPerturbationsString(t *testing.T) {
	for _, tc := range []struct {
		p    clustertest.Perturbations
		want string
	}{
		{0, "none"},
		{clustertest.PerturbLag, "lag"},
		{clustertest.PerturbRelist | clustertest.PerturbConflict, "relist|conflict"},
		{clustertest.AllPerturbations, "lag|close|restart|relist|conflict|handover"},
		{1 << 7, "0x80"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("Perturbations(%#x).String() = %q; want %q", uint8(tc.p), got, tc.want)
		}
	}
}
