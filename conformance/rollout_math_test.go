package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	deploymentutil "k8s.io/kubernetes/pkg/controller/deployment/util"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// Differential tests of rollout's surge, availability and progress maths
// against k8s.io/kubernetes/pkg/controller/deployment/util.

type fencepostIn struct {
	surge, unavailable *intstr.IntOrString
	desired            int32
}

func TestResolveFenceposts(t *testing.T) {
	differential(t, 1,
		func(r *rand.Rand) fencepostIn {
			return fencepostIn{genIntOrPercent(r, chance(r, 0.7)), genIntOrPercent(r, chance(r, 0.7)), genCount(r)}
		},
		func(in fencepostIn) string {
			return fmt.Sprintf("  maxSurge=%s maxUnavailable=%s desired=%d", fmtIOS(in.surge), fmtIOS(in.unavailable), in.desired)
		},
		func(in fencepostIn) verdict {
			us, uu, uerr := deploymentutil.ResolveFenceposts(in.surge, in.unavailable, in.desired)
			os, ou, oerr := rollout.ResolveFenceposts(in.surge, in.unavailable, in.desired)
			if !sameErr(oerr, uerr) || us != os || uu != ou {
				return disagree("upstream (%d, %d, %v); ours (%d, %d, %v)", us, uu, uerr, os, ou, oerr)
			}
			return agree()
		})
}

// deploymentIn is a Deployment with its ReplicaSets.
type deploymentIn struct {
	d   *appsv1.Deployment
	rss []*appsv1.ReplicaSet
}

func (in deploymentIn) String() string { return describeDeployment(in.d) + describeRSs(in.rss) }

func describeDeploymentIn(in deploymentIn) string { return in.String() }

func genDeploymentOnly(r *rand.Rand) deploymentIn {
	return deploymentIn{d: genDeployment(r, genDeploymentOpts{valid: chance(r, 0.5)})}
}

func TestMaxSurgeMaxUnavailableMinAvailable(t *testing.T) {
	type res struct {
		v   int32
		err error
	}
	for _, fn := range []struct {
		name     string
		upstream func(d *appsv1.Deployment) int32
		ours     func(d *appsv1.Deployment) (int32, error)
	}{
		{"MaxSurge", func(d *appsv1.Deployment) int32 { return deploymentutil.MaxSurge(*d) }, rollout.MaxSurge},
		{"MaxUnavailable", func(d *appsv1.Deployment) int32 { return deploymentutil.MaxUnavailable(*d) }, rollout.MaxUnavailable},
		{"MinAvailable", deploymentutil.MinAvailable, rollout.MinAvailable},
	} {
		t.Run(fn.name, func(t *testing.T) {
			differential(t, 2, genDeploymentOnly, describeDeploymentIn, func(in deploymentIn) verdict {
				u, panicked := catch(func() int32 { return fn.upstream(in.d.DeepCopy()) })
				o, oerr := fn.ours(in.d)
				if panicked {
					return knownDeviation(devUpstreamPanics)
				}
				if o != u || fatal(oerr) {
					return disagree("upstream %d; ours (%d, %v)", u, o, oerr)
				}
				return agree()
			})
		})
	}
}

// genNewRSIn is a Deployment, its ReplicaSets and the new one among them
// (sometimes a fresh ReplicaSet of size 0 appended, as getNewReplicaSet
// does before creating).
func genNewRSIn(r *rand.Rand) (deploymentIn, int) {
	d := genDeployment(r, genDeploymentOpts{valid: chance(r, 0.6)})
	rss := genReplicaSets(r, d, 6, genRSOpts{sane: chance(r, 0.7)})
	if len(rss) == 0 || chance(r, 0.3) {
		rs := genReplicaSet(r, d, len(rss), genRSOpts{sane: true})
		rs.Spec.Replicas = ptr(int32(0))
		rss = append(rss, rs)
	}
	return deploymentIn{d: d, rss: rss}, r.IntN(len(rss))
}

type newRSIn struct {
	deploymentIn
	newIdx int
}

func TestNewRSNewReplicas(t *testing.T) {
	differential(t, 2,
		func(r *rand.Rand) newRSIn { in, i := genNewRSIn(r); return newRSIn{in, i} },
		func(in newRSIn) string { return in.String() + fmt.Sprintf("  newRS = [%d]\n", in.newIdx) },
		func(in newRSIn) verdict {
			type res struct {
				v   int32
				err error
			}
			d, rss := in.d.DeepCopy(), cloneRSs(in.rss)
			u, panicked := catch(func() res { v, err := deploymentutil.NewRSNewReplicas(d, rss, rss[in.newIdx]); return res{v, err} })
			o, oerr := rollout.NewRSNewReplicas(in.d, in.rss, in.rss[in.newIdx])
			if panicked {
				if !fatal(oerr) {
					return disagree("upstream panics; ours (%d, %v)", o, oerr)
				}
				return knownDeviation(devUpstreamPanics)
			}
			if !sameErr(oerr, u.err) || (u.err == nil && u.v != o) {
				return disagree("upstream (%d, %v); ours (%d, %v)", u.v, u.err, o, oerr)
			}
			return agree()
		})
}

func TestIsSaturated(t *testing.T) {
	differential(t, 2,
		func(r *rand.Rand) newRSIn { in, i := genNewRSIn(r); return newRSIn{in, i} },
		func(in newRSIn) string { return in.String() + fmt.Sprintf("  rs = [%d]\n", in.newIdx) },
		func(in newRSIn) verdict {
			rs := in.rss[in.newIdx]
			if u, o := deploymentutil.IsSaturated(in.d, rs), rollout.IsSaturated(in.d, rs); u != o {
				return disagree("upstream %v; ours %v", u, o)
			}
			return agree()
		})
}

// statusIn is a Deployment and a freshly computed status for it.
type statusIn struct {
	d  *appsv1.Deployment
	st appsv1.DeploymentStatus
	// offset places the Progressing condition's lastUpdateTime relative to
	// the wall clock, for DeploymentTimedOut.
	offset time.Duration
}

func genStatusIn(r *rand.Rand) statusIn {
	d := genDeployment(r, genDeploymentOpts{valid: true})
	st := genDeploymentStatus(r, *d.Spec.Replicas, d.Generation+int64(r.IntN(2)))
	if chance(r, 0.3) {
		st = *d.Status.DeepCopy()
	}
	return statusIn{d: d, st: st, offset: time.Duration(r.IntN(7200)-3600) * time.Second}
}

func describeStatusIn(in statusIn) string {
	return describeDeployment(in.d) + fmt.Sprintf("  new status: %+v\n  lastUpdateTime offset from wall clock: %v\n", in.st, in.offset)
}

func TestDeploymentCompleteProgressing(t *testing.T) {
	differential(t, 2, genStatusIn, describeStatusIn, func(in statusIn) verdict {
		uc, oc := deploymentutil.DeploymentComplete(in.d, &in.st), rollout.DeploymentComplete(in.d, in.st)
		up, op := deploymentutil.DeploymentProgressing(in.d, &in.st), rollout.DeploymentProgressing(in.d, in.st)
		if uc != oc || up != op {
			return disagree("complete: upstream %v ours %v; progressing: upstream %v ours %v", uc, oc, up, op)
		}
		return agree()
	})
}

// TestDeploymentTimedOut compares against upstream's wall clock: the
// Progressing condition's lastUpdateTime is set relative to time.Now(), and
// cases whose deadline falls between the two clock reads are skipped.
func TestDeploymentTimedOut(t *testing.T) {
	const boundary = "deadline between the two clock reads (skipped)"
	ctx := context.Background()
	differential(t, 2, genStatusIn, describeStatusIn, func(in statusIn) verdict {
		before := time.Now()
		for i := range in.st.Conditions {
			if in.st.Conditions[i].Type == appsv1.DeploymentProgressing {
				in.st.Conditions[i].LastUpdateTime.Time = before.Add(in.offset)
			}
		}
		u := deploymentutil.DeploymentTimedOut(ctx, in.d, &in.st)
		after := time.Now()
		o := rollout.DeploymentTimedOut(in.d, in.st, after)
		if u != o {
			if c := rollout.GetCondition(in.st, appsv1.DeploymentProgressing); c != nil && in.d.Spec.ProgressDeadlineSeconds != nil {
				at := c.LastUpdateTime.Add(time.Duration(*in.d.Spec.ProgressDeadlineSeconds) * time.Second)
				if !at.Before(before) && !at.After(after) {
					return knownDeviation(boundary)
				}
			}
			return disagree("upstream %v; ours %v (now=%v)", u, o, after)
		}
		return agree()
	})
}
