package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/controller"
	deploymentutil "k8s.io/kubernetes/pkg/controller/deployment/util"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// Differential tests of rollout's revision, annotation, template and
// ReplicaSet-selection helpers against deployment/util and pkg/controller.

// discard is the logger handed to upstream functions that log.
var discard = logr.Discard()

func genRSList(r *rand.Rand) deploymentIn {
	d := genDeployment(r, genDeploymentOpts{valid: true})
	rss := genReplicaSets(r, d, 7, genRSOpts{sane: chance(r, 0.5)})
	return deploymentIn{d: d, rss: rss}
}

func TestRevisions(t *testing.T) {
	differential(t, 2, genRSList, describeDeploymentIn, func(in deploymentIn) verdict {
		for i, rs := range in.rss {
			uv, uerr := deploymentutil.Revision(rs)
			ov, oerr := rollout.Revision(rs)
			if uv != ov || (uerr == nil) != (oerr == nil) {
				return disagree("Revision([%d]): upstream (%d, %v); ours (%d, %v)", i, uv, uerr, ov, oerr)
			}
		}
		uv, uerr := deploymentutil.Revision(in.d)
		ov, oerr := rollout.Revision(in.d)
		if uv != ov || (uerr == nil) != (oerr == nil) {
			return disagree("Revision(d): upstream (%d, %v); ours (%d, %v)", uv, uerr, ov, oerr)
		}
		u := deploymentutil.MaxRevision(discard, in.rss)
		if o, oerr := rollout.MaxRevision(in.rss); u != o || fatal(oerr) {
			return disagree("MaxRevision: upstream %d; ours (%d, %v)", u, o, oerr)
		}
		u = deploymentutil.LastRevision(discard, in.rss)
		if o, oerr := rollout.LastRevision(in.rss); u != o || fatal(oerr) {
			return disagree("LastRevision: upstream %d; ours (%d, %v)", u, o, oerr)
		}
		return agree()
	})
}

type annotateIn struct {
	deploymentIn
	idx         int
	newRevision string
	exists      bool
	limit       int
}

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	ctx := context.Background()
	differential(t, 2,
		func(r *rand.Rand) annotateIn {
			in, i := genNewRSIn(r)
			if chance(r, 0.3) {
				in.rss[i].Annotations = map[string]string{
					"deployment.kubernetes.io/revision":         pick(r, "1", "2", "3", ""),
					"deployment.kubernetes.io/revision-history": pick(r, "", "1", "1,2", strings.Repeat("12,", 30)+"1", "111,222,333"),
				}
			}
			return annotateIn{in, i,
				pick(r, "0", "1", "2", "3", "4", "7", "10", "", "x", "99999999999999999999"),
				chance(r, 0.5),
				pick(r, 0, 1, 2, 3, 5, 8, 13, 2000)}
		},
		func(in annotateIn) string {
			return in.String() + fmt.Sprintf("  rs=[%d] newRevision=%q exists=%v limit=%d\n", in.idx, in.newRevision, in.exists, in.limit)
		},
		func(in annotateIn) verdict {
			d, rs := in.d.DeepCopy(), in.rss[in.idx].DeepCopy()
			uchanged, panicked := catch(func() bool {
				return deploymentutil.SetNewReplicaSetAnnotations(ctx, d, rs, in.newRevision, in.exists, in.limit)
			})
			before := in.rss[in.idx].DeepCopy()
			ors, ochanged, oerr := rollout.SetNewReplicaSetAnnotations(in.d, in.rss[in.idx], in.newRevision, in.exists, in.limit)
			if diff := diffOf(before, in.rss[in.idx]); diff != "" {
				return disagree("ours mutated its input %s", diff)
			}
			if panicked {
				return knownDeviation(devUpstreamPanics)
			}
			if uchanged != ochanged || fatal(oerr) {
				return disagree("changed: upstream %v; ours %v (err %v)", uchanged, ochanged, oerr)
			}
			if diff := diffOf(rs.Annotations, ors.Annotations); diff != "" {
				return disagree("annotations %s", diff)
			}
			return agree()
		})
}

type replicasAnnIn struct {
	rs               *appsv1.ReplicaSet
	desired, maxReps int32
}

func TestReplicasAnnotations(t *testing.T) {
	differential(t, 2,
		func(r *rand.Rand) replicasAnnIn {
			d := genDeployment(r, genDeploymentOpts{valid: true})
			rs := genReplicaSet(r, d, 0, genRSOpts{sane: chance(r, 0.5)})
			return replicasAnnIn{rs, pick(r, *d.Spec.Replicas, genCount(r), -1), pick(r, *d.Spec.Replicas+1, genCount(r), *d.Spec.Replicas)}
		},
		func(in replicasAnnIn) string {
			return describeRSs([]*appsv1.ReplicaSet{in.rs}) + fmt.Sprintf("  desired=%d max=%d\n", in.desired, in.maxReps)
		},
		func(in replicasAnnIn) verdict {
			uneed := deploymentutil.ReplicasAnnotationsNeedUpdate(in.rs, in.desired, in.maxReps)
			oneed := rollout.ReplicasAnnotationsNeedUpdate(in.rs, in.desired, in.maxReps)
			urs := in.rs.DeepCopy()
			uchanged := deploymentutil.SetReplicasAnnotations(urs, in.desired, in.maxReps)
			ors, ochanged := rollout.SetReplicasAnnotations(in.rs, in.desired, in.maxReps)
			if uneed != oneed || uchanged != ochanged {
				return disagree("needUpdate: upstream %v ours %v; changed: upstream %v ours %v", uneed, oneed, uchanged, ochanged)
			}
			if diff := diffOf(urs, ors); diff != "" {
				return disagree("SetReplicasAnnotations %s", diff)
			}
			uv, uok := deploymentutil.GetDesiredReplicasAnnotation(discard, in.rs)
			ov, ook, oerr := rollout.AnnotatedDesiredReplicas(in.rs)
			if uv != ov || uok != ook || fatal(oerr) {
				return disagree("GetDesiredReplicasAnnotation: upstream (%d, %v); ours (%d, %v, %v)", uv, uok, ov, ook, oerr)
			}
			return agree()
		})
}

type rollbackIn struct {
	deploymentIn
	idx int
}

func TestDeploymentAnnotationHelpers(t *testing.T) {
	differential(t, 2,
		func(r *rand.Rand) rollbackIn {
			d := genDeployment(r, genDeploymentOpts{valid: true})
			return rollbackIn{deploymentIn{d: d, rss: []*appsv1.ReplicaSet{genReplicaSet(r, d, 0, genRSOpts{})}}, 0}
		},
		describe2[rollbackIn],
		func(in rollbackIn) verdict {
			rs := in.rss[0]
			// SetDeploymentAnnotationsTo.
			ud := in.d.DeepCopy()
			deploymentutil.SetDeploymentAnnotationsTo(ud, rs.DeepCopy())
			od := rollout.SetDeploymentAnnotationsTo(in.d, rs)
			if diff := diffOf(ud, od); diff != "" {
				return disagree("SetDeploymentAnnotationsTo %s", diff)
			}
			// SetDeploymentRevision, with the RS's revision as upstream does.
			rev := rs.Annotations["deployment.kubernetes.io/revision"]
			ud = in.d.DeepCopy()
			uchanged := deploymentutil.SetDeploymentRevision(ud, rev)
			od, ochanged := rollout.SetDeploymentRevision(in.d, rev)
			if uchanged != ochanged {
				return disagree("SetDeploymentRevision changed: upstream %v; ours %v", uchanged, ochanged)
			}
			if diff := diffOf(ud, od); diff != "" {
				return disagree("SetDeploymentRevision %s", diff)
			}
			// SetFromReplicaSetTemplate.
			ud = deploymentutil.SetFromReplicaSetTemplate(in.d.DeepCopy(), *rs.Spec.Template.DeepCopy())
			od = rollout.SetFromReplicaSetTemplate(in.d, rs.Spec.Template)
			if diff := diffOf(ud, od); diff != "" {
				return disagree("SetFromReplicaSetTemplate %s", diff)
			}
			// HasProgressDeadline, HasRevisionHistoryLimit, IsRollingUpdate.
			if deploymentutil.HasProgressDeadline(in.d) != rollout.HasProgressDeadline(in.d) ||
				deploymentutil.HasRevisionHistoryLimit(in.d) != rollout.HasRevisionHistoryLimit(in.d) ||
				deploymentutil.IsRollingUpdate(in.d) != rollout.IsRollingUpdate(in.d) {
				return disagree("HasProgressDeadline/HasRevisionHistoryLimit/IsRollingUpdate differ")
			}
			return agree()
		})
}

func describe2[T interface{ String() string }](in T) string { return in.String() }

func TestEqualIgnoreHash(t *testing.T) {
	type pair struct{ a, b corev1.PodTemplateSpec }
	differential(t, 1,
		func(r *rand.Rand) pair {
			if chance(r, 0.5) {
				a := genTemplate(r)
				b := *a.DeepCopy()
				if chance(r, 0.5) {
					mutateTemplate(r, &b)
				}
				return pair{a, b}
			}
			return pair{templatePool(r.IntN(6), pick(r, "", "h1", "h2")), templatePool(r.IntN(6), pick(r, "", "h1", "h2"))}
		},
		func(p pair) string { return fmt.Sprintf("  a: %+v\n  b: %+v\n", p.a, p.b) },
		func(p pair) verdict {
			a, b := p.a.DeepCopy(), p.b.DeepCopy()
			u := deploymentutil.EqualIgnoreHash(a, b)
			o := rollout.EqualIgnoreHash(&p.a, &p.b)
			if u != o {
				return disagree("upstream %v; ours %v", u, o)
			}
			return agree()
		})
}

func TestComputeHash(t *testing.T) {
	type in struct {
		tpl corev1.PodTemplateSpec
		cc  *int32
	}
	differential(t, 2,
		func(r *rand.Rand) in {
			var cc *int32
			if chance(r, 0.5) {
				cc = ptr(pick(r, int32(0), 1, 2, 7, -1, 1<<31-1))
			}
			if chance(r, 0.3) {
				return in{templatePool(r.IntN(6), pick(r, "", "h1")), cc}
			}
			return in{genTemplate(r), cc}
		},
		func(i in) string { return fmt.Sprintf("  collisionCount=%s template=%+v\n", fmtPtr(i.cc), i.tpl) },
		func(i in) verdict {
			u := controller.ComputeHash(i.tpl.DeepCopy(), i.cc)
			o := rollout.ComputeHash(&i.tpl, i.cc)
			if u != o {
				return disagree("upstream %q; ours %q", u, o)
			}
			return agree()
		})
}

// ptrSeq renders a slice of ReplicaSet pointers by their index in the
// original list, so two orderings of the same objects can be compared.
func ptrSeq(orig, got []*appsv1.ReplicaSet) string {
	idx := make([]string, len(got))
	for i, g := range got {
		idx[i] = "?"
		if g == nil {
			idx[i] = "nil"
		}
		for j, o := range orig {
			if o == g {
				idx[i] = fmt.Sprint(j)
			}
		}
	}
	return "[" + strings.Join(idx, " ") + "]"
}

func TestFindReplicaSets(t *testing.T) {
	differential(t, 2, genRSList, describeDeploymentIn, func(in deploymentIn) verdict {
		before := cloneRSs(in.rss)
		order := append([]*appsv1.ReplicaSet(nil), in.rss...)
		// FindNewReplicaSet sorts its argument: hand upstream a shallow copy.
		un := deploymentutil.FindNewReplicaSet(in.d, append([]*appsv1.ReplicaSet(nil), in.rss...))
		on := rollout.FindNewReplicaSet(in.d, in.rss)
		if un != on {
			return disagree("FindNewReplicaSet: upstream %s; ours %s", ptrSeq(in.rss, []*appsv1.ReplicaSet{un}), ptrSeq(in.rss, []*appsv1.ReplicaSet{on}))
		}
		ua, uall := deploymentutil.FindOldReplicaSets(in.d, append([]*appsv1.ReplicaSet(nil), in.rss...))
		oa, oall := rollout.FindOldReplicaSets(in.d, in.rss)
		if ptrSeq(in.rss, ua) != ptrSeq(in.rss, oa) || ptrSeq(in.rss, uall) != ptrSeq(in.rss, oall) {
			return disagree("FindOldReplicaSets: upstream active %s all %s; ours active %s all %s",
				ptrSeq(in.rss, ua), ptrSeq(in.rss, uall), ptrSeq(in.rss, oa), ptrSeq(in.rss, oall))
		}
		// FindActiveOrLatest, as scale() calls it: the new RS and the old ones.
		ul := deploymentutil.FindActiveOrLatest(un, append([]*appsv1.ReplicaSet(nil), uall...))
		ol := rollout.FindActiveOrLatest(on, oall)
		if ul != ol {
			return disagree("FindActiveOrLatest: upstream %s; ours %s", ptrSeq(in.rss, []*appsv1.ReplicaSet{ul}), ptrSeq(in.rss, []*appsv1.ReplicaSet{ol}))
		}
		if ptrSeq(order, in.rss) != ptrSeq(order, order) {
			return disagree("ours reordered its input: %s", ptrSeq(order, in.rss))
		}
		if diff := diffOf(before, in.rss); diff != "" {
			return disagree("ours mutated its input %s", diff)
		}
		return agree()
	})
}

func TestReplicaSetOrderingsAndSums(t *testing.T) {
	sorted := func(less func([]*appsv1.ReplicaSet) sort.Interface, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
		c := append([]*appsv1.ReplicaSet(nil), rss...)
		sort.Sort(less(c))
		return c
	}
	differential(t, 2, genRSList, describeDeploymentIn, func(in deploymentIn) verdict {
		for _, o := range []struct {
			name     string
			upstream []*appsv1.ReplicaSet
			ours     []*appsv1.ReplicaSet
		}{
			{"ByCreationTimestamp", sorted(func(s []*appsv1.ReplicaSet) sort.Interface { return controller.ReplicaSetsByCreationTimestamp(s) }, in.rss), rollout.SortByCreationTimestamp(in.rss)},
			{"BySizeOlder", sorted(func(s []*appsv1.ReplicaSet) sort.Interface { return controller.ReplicaSetsBySizeOlder(s) }, in.rss), rollout.SortBySizeOlder(in.rss)},
			{"BySizeNewer", sorted(func(s []*appsv1.ReplicaSet) sort.Interface { return controller.ReplicaSetsBySizeNewer(s) }, in.rss), rollout.SortBySizeNewer(in.rss)},
			{"ByRevision", sorted(func(s []*appsv1.ReplicaSet) sort.Interface { return deploymentutil.ReplicaSetsByRevision(s) }, in.rss), rollout.SortByRevision(in.rss)},
			{"FilterActive", controller.FilterActiveReplicaSets(in.rss), rollout.FilterActive(in.rss)},
		} {
			if u, o2 := ptrSeq(in.rss, o.upstream), ptrSeq(in.rss, o.ours); u != o2 {
				return disagree("%s: upstream %s; ours %s", o.name, u, o2)
			}
		}
		sums := [][2]int32{
			{deploymentutil.GetReplicaCountForReplicaSets(in.rss), rollout.TotalReplicas(in.rss)},
			{deploymentutil.GetActualReplicaCountForReplicaSets(in.rss), rollout.TotalActualReplicas(in.rss)},
			{deploymentutil.GetReadyReplicaCountForReplicaSets(in.rss), rollout.TotalReadyReplicas(in.rss)},
			{deploymentutil.GetAvailableReplicaCountForReplicaSets(in.rss), rollout.TotalAvailableReplicas(in.rss)},
		}
		for i, s := range sums {
			if s[0] != s[1] {
				return disagree("sum %d (spec, actual, ready, available): upstream %d; ours %d", i, s[0], s[1])
			}
		}
		if u, o := deploymentutil.GetTerminatingReplicaCountForReplicaSets(in.rss), rollout.TotalTerminatingReplicas(in.rss); fmtPtr(u) != fmtPtr(o) {
			return disagree("terminating: upstream %s; ours %s", fmtPtr(u), fmtPtr(o))
		}
		return agree()
	})
}

type condIn struct {
	st   appsv1.DeploymentStatus
	c    appsv1.DeploymentCondition
	rsc  appsv1.ReplicaSetCondition
	kind appsv1.DeploymentConditionType
}

func TestConditions(t *testing.T) {
	differential(t, 1,
		func(r *rand.Rand) condIn {
			st := genDeploymentStatus(r, 3, 1)
			c := genCondition(r)
			if cur := rollout.GetCondition(st, c.Type); cur != nil && chance(r, 0.5) {
				c.Status = cur.Status
				if chance(r, 0.5) {
					c.Reason = cur.Reason
				}
			}
			return condIn{st, c, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: c.Status, Reason: c.Reason,
				Message: c.Message, LastTransitionTime: genTime(r)}, pick(r, appsv1.DeploymentProgressing, appsv1.DeploymentAvailable, appsv1.DeploymentReplicaFailure)}
		},
		func(in condIn) string {
			return fmt.Sprintf("  status: %+v\n  condition: %+v\n  type: %s\n", in.st, in.c, in.kind)
		},
		func(in condIn) verdict {
			if diff := diffOf(deploymentutil.GetDeploymentCondition(in.st, in.kind), rollout.GetCondition(in.st, in.kind)); diff != "" {
				return disagree("GetDeploymentCondition %s", diff)
			}
			before := *in.st.DeepCopy()
			ust := *in.st.DeepCopy()
			deploymentutil.SetDeploymentCondition(&ust, in.c)
			ost := rollout.SetCondition(in.st, in.c)
			if diff := diffOf(ust, ost); diff != "" {
				return disagree("SetDeploymentCondition %s", diff)
			}
			ust = *in.st.DeepCopy()
			deploymentutil.RemoveDeploymentCondition(&ust, in.kind)
			ost = rollout.RemoveCondition(in.st, in.kind)
			if diff := diffOf(ust, ost); diff != "" {
				return disagree("RemoveDeploymentCondition %s", diff)
			}
			if diff := diffOf(before, in.st); diff != "" {
				return disagree("ours mutated its input status %s", diff)
			}
			if diff := diffOf(deploymentutil.ReplicaSetToDeploymentCondition(in.rsc), rollout.ReplicaSetToDeploymentCondition(in.rsc)); diff != "" {
				return disagree("ReplicaSetToDeploymentCondition %s", diff)
			}
			return agree()
		})
}
