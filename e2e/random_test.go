package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// seeds returns the seeds of the randomised runs: CTRLKIT_E2E_SEED replays
// one, CTRLKIT_SOAK_SEEDS runs a list of seeds and ranges ("1-2000",
// "283,438,456", "1-100,438"), CTRLKIT_SOAK=1 runs seeds 1-200, and by
// default seeds 1-4 run.
func seeds(t *testing.T) []uint64 {
	if s := os.Getenv("CTRLKIT_E2E_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CTRLKIT_E2E_SEED=%q: %v", s, err)
		}
		return []uint64{n}
	}
	spec := "1-4"
	if os.Getenv("CTRLKIT_SOAK") == "1" {
		spec = "1-200"
	}
	if s := os.Getenv("CTRLKIT_SOAK_SEEDS"); s != "" {
		spec = s
	}
	out, err := parseSeeds(spec)
	if err != nil {
		t.Fatalf("CTRLKIT_SOAK_SEEDS=%q: %v", spec, err)
	}
	return out
}

// parseSeeds parses a comma-separated list of seeds and inclusive ranges
// ("1-2000,4711"), in the order given.
func parseSeeds(spec string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seed %q: %w", part, err)
		}
		last := first
		if isRange {
			if last, err = strconv.ParseUint(hi, 10, 64); err != nil {
				return nil, fmt.Errorf("seed range %q: %w", part, err)
			}
			if last < first {
				return nil, fmt.Errorf("seed range %q is empty", part)
			}
		}
		for s := first; ; s++ {
			out = append(out, s)
			if s == last {
				break
			}
		}
	}
	return out, nil
}

// Random Deployments go through random changes (resizes, new images, bad
// images, pauses, rollbacks, strategy changes) while the API fails
// requests, lags and drops watches. Once the changes stop and the bad
// images are replaced, everything converges, and the invariants hold at
// every step.
func TestRandomised(t *testing.T) {
	for _, seed := range seeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			randomRun(t, seed)
		})
	}
}

var (
	goodImages = []string{"app:1", "app:2", "app:3", "app:4"}
	allImages  = append([]string{"app:bad", "app:crash"}, goodImages...)
	fenceposts = []string{"0", "1", "2", "25%", "50%", "100%"}
)

func randomRun(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 0xe2e))
	w := newWorld(t, worldConfig{Seed: seed, SeedEnv: true, Model: randomModel(rnd), Faults: randomFaults(rnd)})
	t.Logf("faults: %+v", w.faults)

	names := make([]string, 1+rnd.IntN(4))
	for i := range names {
		names[i] = fmt.Sprintf("r%d", i)
		d := newDeployment(names[i], int32(rnd.IntN(9)), goodImages[rnd.IntN(len(goodImages))])
		randomStrategy(rnd, d)
		d.Spec.ProgressDeadlineSeconds = ptr(int32(30 + rnd.IntN(600)))
		if rnd.IntN(2) == 0 {
			d.Spec.RevisionHistoryLimit = ptr(int32(rnd.IntN(4)))
		}
		w.create(d)
	}
	if rnd.IntN(2) == 0 {
		w.converge(3 * time.Hour)
	}
	for range 4 + rnd.IntN(8) {
		name := names[rnd.IntN(len(names))]
		w.randomChange(rnd, name)
		w.runFor(time.Duration(rnd.IntN(90)) * time.Second)
	}
	for _, name := range names { // make every rollout possible
		d := w.get(name)
		if d.Spec.Paused {
			w.patch(name, `{"spec":{"paused":false}}`)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img == "app:bad" || img == "app:crash" {
			w.setImage(name, "app:5")
		}
	}
	w.converge(6 * time.Hour)
	t.Logf("converged at +%v", w.now())
}

// randomChange makes one random change to Deployment name.
func (w *world) randomChange(rnd *rand.Rand, name string) {
	w.tb.Helper()
	d := w.get(name)
	switch op := rnd.IntN(6); op {
	case 0:
		n := int32(rnd.IntN(11))
		w.tb.Logf("+%v %s: scale to %d", w.now(), name, n)
		w.scale(name, n)
	case 1, 2:
		img := allImages[rnd.IntN(len(allImages))]
		w.tb.Logf("+%v %s: image %s", w.now(), name, img)
		w.setImage(name, img)
	case 3:
		w.tb.Logf("+%v %s: paused=%v", w.now(), name, !d.Spec.Paused)
		w.patch(name, fmt.Sprintf(`{"spec":{"paused":%v}}`, !d.Spec.Paused))
	case 4:
		res, err := rollout.Undo(d, w.owned(name), 0)
		if err != nil || res.Skipped {
			w.tb.Logf("+%v %s: no rollback (%v)", w.now(), name, err)
			return
		}
		w.tb.Logf("+%v %s: rollback to %s", w.now(), name, res.Target.Name)
		w.rollback(name, res)
	case 5:
		// Draw the strategy once: update may apply it more than once.
		next := d.DeepCopy()
		randomStrategy(rnd, next)
		strategy := next.Spec.Strategy
		w.tb.Logf("+%v %s: strategy %+v", w.now(), name, strategy)
		w.update("change strategy of "+name, name, func(d *appsv1.Deployment) {
			d.Spec.Strategy = *strategy.DeepCopy()
		})
	}
}

// rollback sends kubectl's rollback patch. It replaces
// /metadata/annotations, which fails while the Deployment has none —
// which, on memcluster, is always (see TestDeploymentRevisionAnnotation);
// the template alone is then restored with a merge patch, so that the
// randomised runs exercise rollbacks anyway.
func (w *world) rollback(name string, res rollout.UndoResult) {
	w.tb.Helper()
	w.c.SetFaults(memcluster.Faults{})
	defer w.c.SetFaults(w.faults)
	_, err := w.c.Deployments(ns).Patch(w.ctx, name, res.PatchType, res.Patch, metav1.PatchOptions{})
	if apierrors.IsInvalid(err) {
		tmpl := res.Target.Spec.Template.DeepCopy()
		delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, tmpl.Spec.Containers[0].Image)
		_, err = w.c.Deployments(ns).Patch(w.ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		w.tb.Fatalf("rollback %s: %v", name, err)
	}
}

// randomStrategy gives d a random strategy that the API accepts.
func randomStrategy(rnd *rand.Rand, d *appsv1.Deployment) {
	if rnd.IntN(5) == 0 {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		return
	}
	surge, unavailable := "0", "0"
	for surge == "0" && unavailable == "0" {
		surge, unavailable = fenceposts[rnd.IntN(len(fenceposts))], fenceposts[rnd.IntN(len(fenceposts))]
	}
	withRolling(d, surge, unavailable)
}

// randomModel runs healthy pods with random delays; app:bad never pulls
// and app:crash crash-loops.
func randomModel(rnd *rand.Rand) memcluster.PodModel {
	healthy := memcluster.PodBehavior{StartDelay: time.Duration(rnd.IntN(4)) * time.Second, ShutdownDelay: time.Duration(rnd.IntN(40)) * time.Second}
	bad, crash := healthy, healthy
	bad.Failure, crash.Failure = memcluster.PodBadImage, memcluster.PodCrashLoop
	return memcluster.ImageModel(map[string]memcluster.PodBehavior{"app:bad": bad, "app:crash": crash},
		memcluster.RandomModel(healthy, time.Second, time.Duration(1+rnd.IntN(30))*time.Second))
}

// randomFaults fails a random share of requests with random errors, some
// after the write took effect, delays requests and watch events, and drops
// watches.
func randomFaults(rnd *rand.Rand) memcluster.Faults {
	errs := []metav1.StatusReason{metav1.StatusReasonInternalError, metav1.StatusReasonServiceUnavailable, metav1.StatusReasonConflict,
		metav1.StatusReasonServerTimeout, metav1.StatusReasonTooManyRequests}
	var f memcluster.Faults
	for _, v := range []string{"create", "update", "update/status",
		"patch", "delete", "get", "list", "watch"} {
		if rnd.IntN(4) == 0 {
			continue
		}
		f.Rules = append(f.Rules, memcluster.FaultRule{
			Verb: v, Rate: rnd.Float64() * 0.1, Reason: errs[rnd.IntN(len(errs))],
			AfterWrite: rnd.IntN(3) == 0, Latency: time.Duration(rnd.IntN(300)) * time.Millisecond,
		})
	}
	if rnd.IntN(2) == 0 {
		f.WatchLag = time.Duration(rnd.IntN(3000)) * time.Millisecond
	}
	if rnd.IntN(2) == 0 {
		f.WatchDropRate = rnd.Float64() * 0.01
	}
	return f
}

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []uint64
		err  bool
	}{
		{spec: "7", want: []uint64{7}},
		{spec: "1-4", want: []uint64{1, 2, 3, 4}},
		{spec: "438, 283,10-12", want: []uint64{438, 283, 10, 11, 12}},
		{spec: "5-5", want: []uint64{5}},
		{spec: "5-4", err: true},
		{spec: "x", err: true},
		{spec: "1-", err: true},
		{spec: "", err: true},
	} {
		got, err := parseSeeds(tc.spec)
		if (err != nil) != tc.err {
			t.Errorf("parseSeeds(%q) error = %v; want error %v", tc.spec, err, tc.err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) && !tc.err {
			t.Errorf("parseSeeds(%q) = %v; want %v", tc.spec, got, tc.want)
		}
	}
}
