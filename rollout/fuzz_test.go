package rollout

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// gen turns fuzz bytes into inputs; once the bytes run out it yields zeros.
type gen struct{ b []byte }

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	v := g.b[0]
	g.b = g.b[1:]
	return v
}

func (g *gen) u32() uint32 {
	var buf [4]byte
	for i := range buf {
		buf[i] = g.byte()
	}
	return binary.LittleEndian.Uint32(buf[:])
}

// count is a replica count: mostly small, sometimes extreme or negative
// (only when wild).
func (g *gen) count(wild bool) int32 {
	switch k := g.byte(); {
	case wild && k%16 == 0:
		return int32(g.u32())
	case wild && k%16 == 1:
		return math.MaxInt32 - int32(g.byte())
	case wild && k%16 == 2:
		return -int32(g.byte() % 5)
	default:
		return int32(g.byte() % 20)
	}
}

// param is a maxSurge/maxUnavailable value.
func (g *gen) param(wild bool) *intstr.IntOrString {
	switch k := g.byte() % 8; {
	case k == 0:
		return nil
	case k <= 3:
		v := intstr.FromInt32(int32(g.byte() % 6))
		return &v
	case k <= 6:
		v := intstr.FromString(fmt.Sprintf("%d%%", g.byte()%101))
		return &v
	case wild:
		bad := []string{"abc%", "-5%", "5", "", "%", "1e3%", "999999999999%", "-0%"}
		v := intstr.FromString(bad[g.byte()%byte(len(bad))])
		return &v
	default:
		v := intstr.FromString("25%")
		return &v
	}
}

// world builds a Deployment with a new ReplicaSet and up to four old ones.
// With wild=false every input is one the API server could hold (counts
// ≥ 0, available ≤ spec, valid surge settings, unique names).
func (g *gen) world(wild bool) (*appsv1.Deployment, *appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	d := deploy(g.count(wild), "", "")
	d.Spec.Strategy.RollingUpdate.MaxSurge = g.param(wild)
	d.Spec.Strategy.RollingUpdate.MaxUnavailable = g.param(wild)
	if !wild && d.Spec.Strategy.RollingUpdate.MaxSurge == nil {
		d.Spec.Strategy.RollingUpdate.MaxSurge = intOrStr("1")
	}
	if g.byte()%5 == 0 {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	if wild && g.byte()%7 == 0 {
		d.Spec.Strategy.RollingUpdate = nil
	}
	d.Status.Replicas = g.count(wild)
	mk := func(i int, t string) *appsv1.ReplicaSet {
		spec := g.count(wild)
		av := g.count(wild)
		if !wild && av > spec {
			av = spec
		}
		r := rs(fmt.Sprintf("rs%d", i), int(g.byte()%4), spec, tpl(t), avail(av), actual(g.count(wild)))
		switch g.byte() % 4 {
		case 0:
			setReplicasAnnotations(r, g.count(wild), g.count(wild))
		case 1:
			if wild {
				annotate(r, MaxReplicasAnnotation, "-3")
				annotate(r, DesiredReplicasAnnotation, "zz")
			}
		}
		if wild && g.byte()%5 == 0 {
			r.Spec.Replicas = nil
		}
		return r
	}
	newRS := mk(0, "v2")
	var olds []*appsv1.ReplicaSet
	for i := 1; i <= int(g.byte()%5); i++ {
		olds = append(olds, mk(i, "v1"))
	}
	if wild && g.byte()%6 == 0 {
		newRS = nil
	}
	return d, newRS, olds
}

func fuzzSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{10, 2, 3, 1, 3, 0, 5, 3, 10, 2, 4, 1, 10, 10, 2, 1, 3, 8, 8, 2})
	f.Add([]byte{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte{1, 255, 255, 255, 127, 7, 7, 7, 16, 255, 255, 255, 255, 1, 4, 3, 2, 1, 0, 9, 9, 9})
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox"))
}

// snapshot deep-copies everything a decision function receives.
type snapshot struct {
	D     *appsv1.Deployment
	New   *appsv1.ReplicaSet
	Old   []*appsv1.ReplicaSet
	Order []string
}

func snap(d *appsv1.Deployment, n *appsv1.ReplicaSet, olds []*appsv1.ReplicaSet) snapshot {
	return snapshot{d.DeepCopy(), n.DeepCopy(), cloneAll(olds), names(olds)}
}

func (s snapshot) check(t *testing.T, d *appsv1.Deployment, n *appsv1.ReplicaSet, olds []*appsv1.ReplicaSet) {
	t.Helper()
	if diff := cmp.Diff(s, snap(d, n, olds)); diff != "" {
		t.Fatalf("inputs mutated (-before +after):\n%s", diff)
	}
}

// FuzzDecisions runs every decision function on arbitrary worlds: they
// must not panic and must not modify their inputs.
func FuzzDecisions(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		d, newRS, olds := g.world(true)
		before := snap(d, newRS, olds)
		all := append(cloneAll(olds), newRS)

		_, _ = Rolling(d, newRS, olds)
		_, _ = Recreate(d, newRS, olds, map[types.UID][]*corev1.Pod{"rs1-uid": {pod(corev1.PodRunning)}})
		_, _ = Proportional(d, newRS, olds)
		_, _ = IsScalingEvent(d, newRS, olds)
		_ = Cleanup(d, olds)
		_, _ = NewRSNewReplicas(d, all, newRS)
		_, _ = NewReplicaSet(d, olds)
		_, _ = SyncStatus(d, all, newRS, t0)
		_, _ = PauseCondition(d, t0)
		_ = IsSaturated(d, newRS)
		_ = FindActiveOrLatest(newRS, olds)
		_, _ = FindOldReplicaSets(d, all)
		_, _ = MaxRevision(olds)
		_, _ = History(d, all)
		_, _ = Undo(d, all, int64(g.byte()%4))
		_, _ = Status(d, int64(g.byte()%3))
		if newRS != nil {
			_, _, _ = SetNewReplicaSetAnnotations(d, newRS, fmt.Sprint(g.count(true)), g.byte()%2 == 0, int(g.byte()))
		}
		before.check(t, d, newRS, olds)
	})
}

// FuzzRollingBounds checks, on inputs the API server could hold, that one
// rolling step never lets Σ spec exceed D + maxSurge through the new
// ReplicaSet and never takes availability below D − maxUnavailable through
// scale-downs (assuming, as the ReplicaSet controller does, that
// unavailable pods are deleted first).
func FuzzRollingBounds(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		d, newRS, olds := g.world(false)
		if !IsRollingUpdate(d) {
			return
		}
		step, err := Rolling(d, newRS, olds)
		if fatal(err) {
			return
		}
		surge, _ := MaxSurge(d)
		minAvail, _ := MinAvailable(d)
		D := desired(d)
		size := map[string]int32{}
		all := append(cloneAll(olds), newRS)
		for _, r := range all {
			size[r.Name] = specReplicas(r)
		}
		for _, s := range step.Scales {
			if s.From != size[s.ReplicaSet.Name] {
				t.Fatalf("%v: From %d, but the size was %d", s, s.From, size[s.ReplicaSet.Name])
			}
			size[s.ReplicaSet.Name] = s.To
		}
		var before, after int32
		for _, r := range all {
			before += specReplicas(r)
			after += size[r.Name]
		}
		if step.ScaledNew && size[newRS.Name] > specReplicas(newRS) && after > max(before, D+surge) {
			t.Fatalf("scale-up to Σ %d exceeds D+surge %d (before %d): %v", after, D+surge, before, step.Scales)
		}
		if step.ScaledOld {
			availBefore, availAfter := newRS.Status.AvailableReplicas, newRS.Status.AvailableReplicas
			for _, r := range FilterActive(olds) {
				availBefore += r.Status.AvailableReplicas
				availAfter += min(r.Status.AvailableReplicas, size[r.Name])
			}
			if availAfter < min(minAvail, availBefore) {
				t.Fatalf("availability %d → %d, below minAvailable %d: %v", availBefore, availAfter, minAvail, step.Scales)
			}
		}
		for _, s := range step.Scales {
			if s.To < 0 {
				t.Fatalf("negative size: %v", s)
			}
		}
	})
}

// FuzzProportionalSum checks that a proportional resize hands out exactly
// the replicas it has to (growing), or never goes below them and never
// below zero per ReplicaSet (shrinking).
func FuzzProportionalSum(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		d, newRS, olds := g.world(false)
		if !IsRollingUpdate(d) || FindActiveOrLatest(newRS, olds) != nil || IsSaturated(d, newRS) {
			return
		}
		scales, err := Proportional(d, newRS, olds)
		if fatal(err) {
			t.Fatal(err)
		}
		active := FilterActive(append(cloneAll(olds), newRS))
		size := map[string]int32{}
		for _, r := range active {
			size[r.Name] = specReplicas(r)
		}
		for _, s := range scales {
			size[s.ReplicaSet.Name] = s.To
		}
		var total, before int32
		for _, r := range active {
			before += specReplicas(r)
			total += size[r.Name]
			if size[r.Name] < 0 {
				t.Fatalf("negative size for %s: %v", r.Name, scales)
			}
		}
		surge, _ := MaxSurge(d)
		allowed := desired(d) + surge
		if desired(d) == 0 {
			allowed = 0
		}
		switch {
		case allowed >= before && total != allowed:
			t.Fatalf("grew to Σ %d; want exactly %d (from %d): %v", total, allowed, before, scales)
		case allowed < before && total < allowed:
			t.Fatalf("shrank to Σ %d, below %d: %v", total, allowed, scales)
		}
	})
}

// FuzzResolveFenceposts checks the fencepost rules on arbitrary values.
func FuzzResolveFenceposts(f *testing.F) {
	f.Add("25%", "25%", int32(10))
	f.Add("0", "0", int32(0))
	f.Add("-5%", "abc%", int32(3))
	f.Add("1000000%", "1", int32(math.MaxInt32))
	f.Add("", "%", int32(-7))
	f.Fuzz(func(t *testing.T, s, u string, desired int32) {
		ms, mu := intstr.Parse(s), intstr.Parse(u)
		surge, unavail, err := ResolveFenceposts(&ms, &mu, desired)
		if fatal(err) {
			if surge != 0 || unavail != 0 {
				t.Fatalf("error %v with values %d/%d", err, surge, unavail)
			}
			return
		}
		if err == nil && (surge < 0 || unavail < 0) {
			t.Fatalf("negative %d/%d without error", surge, unavail)
		}
		if err == nil && surge == 0 && unavail == 0 {
			t.Fatal("both fenceposts 0")
		}
		d := deploy(desired, s, u)
		if mu, _ := MaxUnavailable(d); desired >= 0 && mu > desired {
			t.Fatalf("MaxUnavailable %d > D %d", mu, desired)
		}
	})
}

// FuzzProgress drives the status machinery with arbitrary counts and times.
func FuzzProgress(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		d, newRS, olds := g.world(true)
		d.Spec.ProgressDeadlineSeconds = ptr(g.count(true))
		d.Status.Conditions = []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionTrue,
			[]string{ReasonReplicaSetUpdated, ReasonNewReplicaSetAvailable, ReasonProgressDeadlineExceeded, ReasonDeploymentPaused}[g.byte()%4], "", t0, t0)}
		before := snap(d, newRS, olds)
		now := t0.Add(time.Duration(int64(g.u32())) * time.Millisecond)
		up, _ := SyncStatus(d, append(cloneAll(olds), newRS), newRS, now)
		if up.Check.Needed && !up.Check.RateLimited && up.Check.After != up.Check.Remaining+time.Second {
			t.Fatalf("After %v != Remaining %v + 1s", up.Check.After, up.Check.Remaining)
		}
		if up.Check.Needed && up.Changed {
			t.Fatal("a progress check is only scheduled when nothing changed")
		}
		before.check(t, d, newRS, olds)
	})
}
