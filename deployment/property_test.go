package deployment_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// randomIntOrPercent returns 0–3 or 0%/25%/50%.
func randomIntOrPercent(rng *rand.Rand) intstr.IntOrString {
	if rng.IntN(2) == 0 {
		return intstr.FromInt32(rng.Int32N(4))
	}
	return intstr.FromString(fmt.Sprintf("%d%%", 25*rng.IntN(3)))
}

func randomDeployment(rng *rand.Rand) *appsv1.Deployment {
	d := newDeployment(rng.Int32N(12), "web:v0")
	if rng.IntN(5) == 0 {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	} else {
		fenceposts(randomIntOrPercent(rng), randomIntOrPercent(rng))(d)
	}
	d.Spec.RevisionHistoryLimit = ptr(rng.Int32N(4))
	return d
}

// totals returns Σ spec.replicas and the available pods that survive each
// ReplicaSet's spec (the ReplicaSet controller removes unavailable pods
// first), over the ReplicaSets owned by d.
func totals(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (spec, available int32) {
	for _, rs := range rss {
		spec += ptrVal(rs.Spec.Replicas)
		available += min(rs.Status.AvailableReplicas, ptrVal(rs.Spec.Replicas))
	}
	return spec, available
}

// after applies the plan's scale actions to a copy of the snapshot list.
func after(rss []*appsv1.ReplicaSet, p deployment.Plan) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, 0, len(rss))
	byName := map[string]int{}
	for _, rs := range rss {
		byName[rs.Name] = len(out)
		out = append(out, rs)
	}
	for _, a := range p.Actions {
		switch a := a.(type) {
		case deployment.ScaleReplicaSet:
			out[byName[a.ReplicaSet.Name]] = a.ReplicaSet
		case deployment.CreateReplicaSet:
			out = append(out, a.ReplicaSet)
		}
	}
	return out
}

func isScalingEvent(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) bool {
	for _, rs := range rollout.FilterActive(rss) {
		if n, ok, _ := rollout.AnnotatedDesiredReplicas(rs); ok && n != ptrVal(d.Spec.Replicas) {
			return true
		}
	}
	return false
}

// TestRandomRollouts drives seeded random Deployments through random edits
// and random pod readiness, and checks after every sync that
//   - Sync did not modify its input;
//   - the controller never grows the total beyond D+maxSurge;
//   - a rolling step (not a scaling event) never takes available pods
//     below D−maxUnavailable (or below what was available before);
//   - once edits stop and pods become ready, the Deployment converges to
//     complete, and the plan then writes nothing.
func TestRandomRollouts(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 42))
			w := newWorld()
			d := w.addDeployment(randomDeployment(rng))
			key := deployment.KeyOf(d)
			version := 0
			step := func(edits bool, readiness func(rs *appsv1.ReplicaSet, spec int32) int32) deployment.Plan {
				if edits && rng.IntN(6) == 0 {
					switch rng.IntN(3) {
					case 0:
						version++
						w.edit(key, setImage(fmt.Sprintf("web:v%d", version)))
					case 1:
						w.edit(key, setReplicas(rng.Int32N(12)))
					case 2:
						w.edit(key, func(d *appsv1.Deployment) { d.Spec.Paused = !d.Spec.Paused })
					}
				}
				s := snapshot(t, w, key)
				before := deepCopyState(s)
				p, err := deployment.Sync(s, w.now)
				if err != nil {
					t.Fatalf("Sync: %v", err)
				}
				if !reflect.DeepEqual(before, s) {
					t.Fatalf("Sync modified its input")
				}
				checkBounds(t, s, p)
				if _, err := deployment.WritePlan(context.Background(), w, nil, p); err != nil {
					t.Fatalf("WritePlan: %v\nplan:\n%s", err, p)
				}
				w.settleWith(readiness)
				w.now = w.now.Add(stepInterval)
				return p
			}
			random := func(rs *appsv1.ReplicaSet, spec int32) int32 {
				if rng.IntN(3) == 0 {
					return spec
				}
				return rng.Int32N(spec + 1)
			}
			for i := 0; i < 40; i++ {
				step(true, random)
			}
			w.edit(key, setPaused(false))
			all := func(_ *appsv1.ReplicaSet, spec int32) int32 { return spec }
			w.settleWith(all)
			for i := 0; ; i++ {
				if i == 40 {
					t.Fatalf("no convergence:\n%s", w.describe(key))
				}
				if p := step(false, all); !p.HasWrites() {
					break
				}
			}
			got, _ := w.Get(key)
			if !rollout.DeploymentComplete(got, got.Status) {
				t.Errorf("converged but not complete:\n%s", w.describe(key))
			}
			if c := rollout.GetCondition(got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != rollout.ReasonNewReplicaSetAvailable {
				t.Errorf("Progressing = %+v; want NewReplicaSetAvailable", c)
			}
		})
	}
}

func checkBounds(t *testing.T, s deployment.State, p deployment.Plan) {
	t.Helper()
	d := s.Deployment
	var owned []*appsv1.ReplicaSet
	for _, rs := range s.ReplicaSets {
		owned = append(owned, rs)
	}
	specBefore, availBefore := totals(d, owned)
	next := after(owned, p)
	specAfter, availAfter := totals(d, next)
	surge, _ := rollout.MaxSurge(d)
	D := ptrVal(d.Spec.Replicas)
	if specAfter > max(specBefore, D+surge) {
		t.Fatalf("Σspec %d → %d exceeds D+maxSurge = %d\nplan:\n%s", specBefore, specAfter, D+surge, p)
	}
	if !rollout.IsRollingUpdate(d) || d.Spec.Paused || isScalingEvent(d, owned) {
		return
	}
	minAvailable, _ := rollout.MinAvailable(d)
	if availAfter < min(minAvailable, availBefore) {
		t.Fatalf("available %d → %d, below min(D−maxUnavailable = %d, before)\nplan:\n%s", availBefore, availAfter, minAvailable, p)
	}
}

func deepCopyState(s deployment.State) deployment.State {
	out := deployment.State{Deployment: s.Deployment.DeepCopy()}
	for _, rs := range s.ReplicaSets {
		out.ReplicaSets = append(out.ReplicaSets, rs.DeepCopy())
	}
	if s.Pods != nil {
		out.Pods = map[types.UID][]*corev1.Pod{}
		for k, pods := range s.Pods {
			var cp []*corev1.Pod
			for _, p := range pods {
				cp = append(cp, p.DeepCopy())
			}
			out.Pods[k] = cp
		}
	}
	return out
}
