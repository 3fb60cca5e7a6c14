package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	_ "unsafe" // go:linkname to upstream's unexported pure functions

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	upstreamrs "k8s.io/kubernetes/pkg/controller/replicaset"

	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// Upstream's status calculations are unexported free functions. They are
// pure (apart from the wall clock the Deployment one reads through
// metav1.Now), so the suite links to them directly.

//go:linkname upstreamDeploymentStatus k8s.io/kubernetes/pkg/controller/deployment.calculateStatus
func upstreamDeploymentStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus

//go:linkname upstreamRSStatus k8s.io/kubernetes/pkg/controller/replicaset.calculateStatus
func upstreamRSStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, features upstreamrs.ReplicaSetControllerFeatures, now time.Time) appsv1.ReplicaSetStatus

//go:linkname upstreamGetPodsToDelete k8s.io/kubernetes/pkg/controller/replicaset.getPodsToDelete
func upstreamGetPodsToDelete(filtered, related []*corev1.Pod, diff int) []*corev1.Pod

// blankFresh zeroes condition timestamps at or after since: those were
// stamped with the wall clock during the call, which ours takes as an
// argument instead.
func blankFresh(st *appsv1.DeploymentStatus, since time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if !c.LastUpdateTime.Time.Before(since) {
			c.LastUpdateTime = metav1Zero
		}
		if !c.LastTransitionTime.Time.Before(since) {
			c.LastTransitionTime = metav1Zero
		}
	}
}

func TestDeploymentCalculateStatus(t *testing.T) {
	differential(t, 2,
		func(r *rand.Rand) newRSIn {
			in, i := genNewRSIn(r)
			in.d = genDeployment(r, genDeploymentOpts{valid: true})
			for _, rs := range in.rss {
				if chance(r, 0.05) {
					rs.Status.TerminatingReplicas = nil
				}
			}
			if chance(r, 0.2) {
				i = -1
			}
			return newRSIn{in, i}
		},
		func(in newRSIn) string { return in.String() + fmt.Sprintf("  newRS = [%d]\n", in.newIdx) },
		func(in newRSIn) verdict {
			var newRS *appsv1.ReplicaSet
			if in.newIdx >= 0 {
				newRS = in.rss[in.newIdx]
			}
			since := time.Now()
			u := upstreamDeploymentStatus(cloneRSs(in.rss), newRS.DeepCopy(), in.d.DeepCopy())
			before := in.d.DeepCopy()
			o, err := rollout.CalculateStatus(in.d, in.rss, newRS, time.Now())
			if fatal(err) {
				return disagree("ours failed: %v", err)
			}
			if diff := diffOf(before, in.d); diff != "" {
				return disagree("ours mutated the Deployment %s", diff)
			}
			blankFresh(&u, since)
			blankFresh(&o, since)
			if diff := diffOf(u, o); diff != "" {
				return disagree("status %s", diff)
			}
			return agree()
		})
}

type rsStatusIn struct {
	rs          *appsv1.ReplicaSet
	pods        []*corev1.Pod
	manageErr   error
	now         time.Time
	terminating []*corev1.Pod
}

func TestReplicaSetCalculateStatus(t *testing.T) {
	features := upstreamrs.DefaultReplicaSetControllerFeatures()
	differential(t, 2,
		func(r *rand.Rand) rsStatusIn {
			d := genDeployment(r, genDeploymentOpts{valid: true})
			rs := genReplicaSet(r, d, 0, genRSOpts{sane: true})
			rs.Spec.MinReadySeconds = pick(r, int32(0), 0, 1, 30, 3600)
			pods := genPods(r, rs, r.IntN(15), genPodOpts{nodes: 2})
			var active, terminating []*corev1.Pod
			for _, p := range pods {
				switch {
				case replicaset.IsPodActive(p):
					active = append(active, p)
				case replicaset.IsPodTerminating(p):
					terminating = append(terminating, p)
				}
			}
			var err error
			if chance(r, 0.3) {
				err = errors.New(pick(r, "quota exceeded", "forbidden"))
			}
			if chance(r, 0.3) {
				rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{Type: "Other", Status: corev1.ConditionTrue})
			}
			return rsStatusIn{rs, active, err, genNow.Add(time.Duration(r.IntN(7200)-3600) * time.Second), terminating}
		},
		func(in rsStatusIn) string {
			return fmt.Sprintf("  rs spec=%s minReady=%d status=%+v labels=%v manageErr=%v now=%v\n  active:\n%s  terminating:\n%s",
				fmtPtr(in.rs.Spec.Replicas), in.rs.Spec.MinReadySeconds, in.rs.Status, in.rs.Spec.Template.Labels, in.manageErr, in.now,
				describePods(in.pods), describePods(in.terminating))
		},
		func(in rsStatusIn) verdict {
			u := upstreamRSStatus(in.rs.DeepCopy(), in.pods, in.terminating, in.manageErr, features, in.now)
			o := must(replicaset.CalculateStatus(in.rs, in.pods, in.terminating, in.manageErr, in.now))
			// Upstream stamps a new ReplicaFailure condition with the wall
			// clock (NewReplicaSetCondition); ours with now.
			hadFailure := false
			for _, c := range in.rs.Status.Conditions {
				hadFailure = hadFailure || c.Type == appsv1.ReplicaSetReplicaFailure
			}
			for _, st := range []*appsv1.ReplicaSetStatus{&u, &o} {
				for i := range st.Conditions {
					if st.Conditions[i].Type == appsv1.ReplicaSetReplicaFailure && !hadFailure {
						st.Conditions[i].LastTransitionTime = metav1Zero
					}
				}
			}
			if diff := diffOf(u, o); diff != "" {
				return disagree("status %s", diff)
			}
			return agree()
		})
}

func TestGetPodsToDelete(t *testing.T) {
	const wallClock = "upstream ranks with the wall clock, ours with genNow (order differs across a log2 bucket)"
	differential(t, 4, genPodsIn, describePodsIn, func(in podsIn) verdict {
		active := must(replicaset.RankForDeletion(in.pods, nil, time.Time{})) // any order; filtered below
		active = active[:0]
		for _, p := range in.pods {
			if replicaset.IsPodActive(p) {
				active = append(active, p)
			}
		}
		n := min(in.n, len(active))
		// Upstream's Now is metav1.Now(): shift the pods so genNow is one
		// second ago, and rank ours at the wall clock too. (Shifting genNow
		// to the very instant would make most cases hit U1.)
		shift := time.Now().Add(-time.Second).Sub(genNow)
		shifted := make([]*corev1.Pod, len(active))
		byName := map[string]*corev1.Pod{}
		for i, p := range active {
			c := p.DeepCopy()
			shiftPod(c, shift)
			shifted[i] = c
			byName[c.Name] = c
		}
		var related []*corev1.Pod
		for _, p := range in.related {
			if c, ok := byName[p.Name]; ok {
				related = append(related, c)
				continue
			}
			c := p.DeepCopy()
			shiftPod(c, shift)
			related = append(related, c)
		}
		input := append([]*corev1.Pod(nil), shifted...)
		o := podNames(must(replicaset.PodsToDelete(shifted, related, n, time.Now())))
		uPods, panicked := catch(func() []*corev1.Pod { return upstreamGetPodsToDelete(input, related, n) })
		if panicked {
			// reportSortingDeletionAgeRatioMetric divides by the youngest
			// ready pod's age in whole milliseconds (FINDINGS.md U1).
			return knownDeviation(devUpstreamPanics + " (age-ratio metric divides by zero)")
		}
		u := podNames(uPods)
		if u != o {
			// The two "now"s differ by microseconds; a pod whose age sits
			// on a power-of-two boundary can change bucket.
			if o2 := podNames(must(replicaset.PodsToDelete(shifted, related, n, time.Now()))); o2 == u {
				return knownDeviation(wallClock)
			}
			return disagree("upstream %s; ours %s", u, o)
		}
		return agree()
	})
}
