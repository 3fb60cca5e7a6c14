package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe" // go:linkname (bench_test.go) and the event recorder swap

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/pkg/controller"
	upstreamdeployment "k8s.io/kubernetes/pkg/controller/deployment"
	deploymentutil "k8s.io/kubernetes/pkg/controller/deployment/util"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/features"
)

// Documented deviations of deployment.Sync (deployment/doc.go, FINDINGS.md).
const (
	devStaleStatus     = "status written once after the plan's scaling (upstream's last write counts unavailable from pre-scale specs)"
	devAnnotRefresh    = "stale desired-replicas annotation refreshed (upstream never leaves the scaling-event path)"
	devCleanupOwnWrite = "cleanup sees the plan's own writes (upstream deletes a ReplicaSet it just scaled up)"
	devStuckScaling    = "unresolvable scaling event goes to the rollout (upstream repeats a no-op scaling event forever)"
	devOldStatus       = "Recreate waits for old ReplicaSet statuses to observe their generation (upstream trusts status.replicas written before)"
	devNewStatus       = "a new ReplicaSet whose status is behind its generation counts no available pod for scale-downs (upstream trusts it)"
	devShrinkingStatus = "an old ReplicaSet whose status is behind its generation counts at most spec.replicas available pods for scale-downs (upstream trusts it)"
)

const (
	annDesired = "deployment.kubernetes.io/desired-replicas"
	annMax     = "deployment.kubernetes.io/max-replicas"
	annRev     = "deployment.kubernetes.io/revision"
)

// deployWorld is the cluster state one Deployment sync sees.
type deployWorld struct {
	d    *appsv1.Deployment
	rss  []*appsv1.ReplicaSet
	pods []*corev1.Pod // only for Recreate
	now  time.Time     // wall clock at build time
}

func (w deployWorld) clone() deployWorld {
	c := deployWorld{d: w.d.DeepCopy(), rss: cloneRSs(w.rss), now: w.now}
	for _, p := range w.pods {
		c.pods = append(c.pods, p.DeepCopy())
	}
	return c
}

func describeDeployWorld(w deployWorld) string {
	s := describeDeployment(w.d) + fmt.Sprintf("  template=%s generation=%d observed=%d collisionCount=%s conditions=%d\n",
		firstImage(&w.d.Spec.Template), w.d.Generation, w.d.Status.ObservedGeneration, fmtPtr(w.d.Status.CollisionCount), len(w.d.Status.Conditions))
	s += describeRSs(w.rss)
	per := map[string]int{}
	for _, p := range w.pods {
		per[p.OwnerReferences[0].Name+"/"+string(p.Status.Phase)]++
	}
	if len(per) > 0 {
		s += fmt.Sprintf("  pods: %v\n", per)
	}
	return s
}

// deployTemplate is template k of a small pool: the six of templatePool
// (with its semantically equal pair) times image variants.
func deployTemplate(k int) corev1.PodTemplateSpec {
	t := templatePool(k%6, "")
	if k >= 6 {
		t.Spec.Containers[0].Image += fmt.Sprintf("-v%d", k/6)
	}
	return t
}

func genRollingValue(r *rand.Rand) intstr.IntOrString {
	if chance(r, 0.5) {
		return intstr.FromInt32(int32(r.IntN(5)))
	}
	return intstr.FromString(pick(r, "0%", "10%", "25%", "34%", "50%", "100%"))
}

func isZeroIOS(v intstr.IntOrString) bool {
	return (v.Type == intstr.Int && v.IntVal == 0) || (v.Type == intstr.String && v.StrVal == "0%")
}

func ago(now time.Time, r *rand.Rand) metav1.Time {
	// Half-second offsets: never exactly on the 600 s progress deadline, so
	// upstream's later clock read cannot straddle it.
	return metav1.NewTime(now.Add(-time.Duration(r.IntN(1200))*time.Second - 500*time.Millisecond))
}

// genDeployWorld builds a valid Deployment with 0–5 owned ReplicaSets.
func genDeployWorld(r *rand.Rand, now time.Time) deployWorld {
	D := int32(r.IntN(21))
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 1 + int64(r.IntN(3)),
			ResourceVersion: "1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(D),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Paused:   chance(r, 0.15),
		},
	}
	if chance(r, 0.25) {
		d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	} else {
		s, u := genRollingValue(r), genRollingValue(r)
		for isZeroIOS(s) && isZeroIOS(u) {
			s, u = genRollingValue(r), genRollingValue(r)
		}
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
	}
	switch r.IntN(5) {
	case 0: // nil: unlimited history
	case 1:
		d.Spec.RevisionHistoryLimit = ptr(int32(10))
	default:
		d.Spec.RevisionHistoryLimit = ptr(int32(r.IntN(3)))
	}
	if chance(r, 0.8) {
		d.Spec.ProgressDeadlineSeconds = ptr(int32(600))
	}

	n := r.IntN(6)
	ks := r.Perm(12)[:n+1] // distinct templates; ks[n] is a fresh one
	var rss []*appsv1.ReplicaSet
	rev := 0
	for i := range n {
		tpl := deployTemplate(ks[i])
		hash := controller.ComputeHash(&tpl, nil)
		tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		rev += 1 + r.IntN(2)
		var spec int32
		if !chance(r, 0.35) {
			spec = int32(r.IntN(int(D) + 4))
		}
		ann := map[string]string{annRev: fmt.Sprint(rev)}
		switch r.IntN(7) {
		case 0: // missing
		case 1, 2:
			ann[annDesired] = fmt.Sprint(r.IntN(21))
		default:
			ann[annDesired] = fmt.Sprint(D)
		}
		if chance(r, 0.8) {
			ann[annMax] = fmt.Sprint(D + int32(r.IntN(4)))
		}
		st := spec
		if chance(r, 0.15) {
			st = int32(r.IntN(int(spec) + 2))
		}
		avail := st
		if chance(r, 0.5) {
			avail = int32(r.IntN(int(st) + 1))
		}
		ready := avail + int32(r.IntN(int(st-avail)+1))
		gen := int64(1)
		if chance(r, 0.1) {
			gen = 2 // scaled, and its status has not caught up yet
		}
		rs := &appsv1.ReplicaSet{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "web-" + hash, Namespace: "ns", UID: types.UID("uid-web-" + hash), ResourceVersion: "1", Generation: gen,
				Labels:            map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash},
				CreationTimestamp: metav1.NewTime(now.Add(-time.Duration(n-i) * time.Minute)),
				OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
				Annotations:       ann,
			},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr(spec),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}},
				Template: tpl,
			},
			Status: appsv1.ReplicaSetStatus{Replicas: st, FullyLabeledReplicas: st, ReadyReplicas: ready, AvailableReplicas: avail,
				ObservedGeneration: 1, TerminatingReplicas: ptr(int32(0))},
		}
		rss = append(rss, rs)
	}
	switch {
	case n > 0 && chance(r, 0.5): // no template change: the newest RS is current
		d.Spec.Template = deployTemplate(ks[n-1])
	case n > 1 && chance(r, 0.15): // back to an older template
		d.Spec.Template = deployTemplate(ks[r.IntN(n-1)])
	default:
		d.Spec.Template = deployTemplate(ks[n])
	}
	if n > 0 && chance(r, 0.9) {
		d.Annotations = map[string]string{annRev: fmt.Sprint(rev)}
	}
	d.Status.ObservedGeneration = d.Generation - int64(r.IntN(2))
	for _, rs := range rss {
		d.Status.Replicas += rs.Status.Replicas
		d.Status.AvailableReplicas += rs.Status.AvailableReplicas
		d.Status.ReadyReplicas += rs.Status.ReadyReplicas
	}
	if chance(r, 0.1) {
		d.Status.CollisionCount = ptr(int32(r.IntN(2)))
	}
	if chance(r, 0.6) {
		t1, t2 := ago(now, r), ago(now, r)
		d.Status.Conditions = append(d.Status.Conditions,
			appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: pick(r, corev1.ConditionTrue, corev1.ConditionFalse),
				Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: t1, LastTransitionTime: t1})
		if d.Spec.ProgressDeadlineSeconds != nil {
			reason := pick(r, "ReplicaSetUpdated", "NewReplicaSetAvailable", "NewReplicaSetCreated", "ProgressDeadlineExceeded")
			status := corev1.ConditionTrue
			if reason == "ProgressDeadlineExceeded" {
				status = corev1.ConditionFalse
			}
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing,
				Status: status, Reason: reason, Message: "generated", LastUpdateTime: t2, LastTransitionTime: t2})
		}
	}
	w := deployWorld{d: d, rss: rss, now: now}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		for _, rs := range rss {
			w.pods = append(w.pods, podsFor(rs, rs.Status.Replicas, r)...)
		}
	}
	return w
}

// podsFor returns n pods controlled by rs: Running and Ready, except that
// with r non-nil some are Failed or Succeeded (not running for Recreate).
func podsFor(rs *appsv1.ReplicaSet, n int32, r *rand.Rand) []*corev1.Pod {
	var out []*corev1.Pod
	for j := range n {
		phase := corev1.PodRunning
		if r != nil && chance(r, 0.1) {
			phase = pick(r, corev1.PodFailed, corev1.PodSucceeded)
		}
		labels := map[string]string{}
		for k, v := range rs.Spec.Template.Labels {
			labels[k] = v
		}
		out = append(out, &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", rs.Name, j), Namespace: rs.Namespace,
				UID: types.UID(fmt.Sprintf("pod-%s-%d", rs.Name, j)), Labels: labels, CreationTimestamp: rs.CreationTimestamp,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Spec: rs.Spec.Template.Spec,
			Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: rs.CreationTimestamp}}},
		})
	}
	return out
}

// deployResult is the world after one sync, plus what the sync did.
type deployResult struct {
	d       *appsv1.Deployment
	rss     map[string]*appsv1.ReplicaSet
	created []string
	deleted []string
	events  []string
	err     error
	// refreshed: ReplicaSets ours rewrote at unchanged size (annotations only).
	refreshed []string
	writes    bool
}

// unexportedField gives write access to an unexported field of upstream's
// controller (its event recorder, so events can be read back).
func unexportedField(ptr any, name string) reflect.Value {
	f := reflect.ValueOf(ptr).Elem().FieldByName(name)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

func upstreamDeploySync(ctx context.Context, w deployWorld) (res deployResult) {
	var objs []runtime.Object
	objs = append(objs, w.d.DeepCopy())
	for _, rs := range w.rss {
		objs = append(objs, rs.DeepCopy())
	}
	for _, p := range w.pods {
		objs = append(objs, p.DeepCopy())
	}
	client := fake.NewSimpleClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	dInf, rsInf, podInf := f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods()
	dc, err := upstreamdeployment.NewDeploymentController(ctx, dInf, rsInf, podInf, client)
	if err != nil {
		panic(err)
	}
	unexportedField(dc, "eventBroadcaster").Interface().(record.EventBroadcaster).Shutdown()
	rec := record.NewFakeRecorder(1000)
	unexportedField(dc, "eventRecorder").Set(reflect.ValueOf(record.EventRecorder(rec)))
	_ = dInf.Informer().GetIndexer().Add(w.d.DeepCopy())
	for _, rs := range w.rss {
		_ = rsInf.Informer().GetIndexer().Add(rs.DeepCopy())
	}
	for _, p := range w.pods {
		_ = podInf.Informer().GetIndexer().Add(p.DeepCopy())
	}
	client.ClearActions()
	res.err = upstreamSyncDeployment(dc, ctx, "ns/web")
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		res.writes = true
		if a.GetResource().Resource != "replicasets" {
			continue
		}
		switch a := a.(type) {
		case clienttesting.CreateAction:
			if a.GetVerb() != "create" {
				continue
			}
			res.created = append(res.created, a.GetObject().(*appsv1.ReplicaSet).Name)
		case clienttesting.DeleteAction:
			if a.GetVerb() != "delete" {
				continue
			}
			res.deleted = append(res.deleted, a.GetName())
		}
	}
	close(rec.Events)
	for e := range rec.Events {
		res.events = append(res.events, e)
	}
	d, err := client.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		panic(err)
	}
	res.d = d
	list, err := client.AppsV1().ReplicaSets("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	res.rss = map[string]*appsv1.ReplicaSet{}
	for i := range list.Items {
		res.rss[list.Items[i].Name] = &list.Items[i]
	}
	return res
}

func oursDeploySync(w deployWorld) (res deployResult) {
	res, _ = oursDeployPlan(w, features.Gates{}, time.Now())
	return res
}

// oursDeployPlan is oursDeploySync with feature gates and a time, and
// the plan it made.
func oursDeployPlan(w deployWorld, gates features.Gates, now time.Time) (res deployResult, plan deployment.Plan) {
	st := deployment.State{Deployment: w.d.DeepCopy(), ReplicaSets: cloneRSs(w.rss), FeatureGates: gates}
	if len(w.pods) > 0 || w.d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		st.Pods = map[types.UID][]*corev1.Pod{}
		for _, rs := range w.rss {
			st.Pods[rs.UID] = []*corev1.Pod{}
		}
		for _, p := range w.pods {
			uid := p.OwnerReferences[0].UID
			st.Pods[uid] = append(st.Pods[uid], p.DeepCopy())
		}
	}
	plan, err := deployment.Sync(st, now)
	res.err = err
	res.d = w.d.DeepCopy()
	res.rss = map[string]*appsv1.ReplicaSet{}
	for _, rs := range w.rss {
		res.rss[rs.Name] = rs.DeepCopy()
	}
	res.writes = plan.HasWrites()
	for _, a := range plan.Actions {
		switch a := a.(type) {
		case deployment.CreateReplicaSet:
			res.created = append(res.created, a.ReplicaSet.Name)
			res.rss[a.ReplicaSet.Name] = a.ReplicaSet.DeepCopy()
		case deployment.ScaleReplicaSet:
			if a.From == a.To {
				res.refreshed = append(res.refreshed, a.ReplicaSet.Name)
			}
			res.rss[a.ReplicaSet.Name] = a.ReplicaSet.DeepCopy()
		case deployment.UpdateReplicaSet:
			res.rss[a.ReplicaSet.Name] = a.ReplicaSet.DeepCopy()
		case deployment.DeleteReplicaSet:
			res.deleted = append(res.deleted, a.Key.Name)
			delete(res.rss, a.Key.Name)
		case deployment.UpdateDeployment:
			res.d = a.Deployment.DeepCopy()
		case deployment.Event:
			res.events = append(res.events, a.Type+" "+a.Reason+" "+a.Message)
		default:
			panic(fmt.Sprintf("unexpected action %T", a))
		}
	}
	if us := plan.UpdateStatus; us != nil {
		res.d.Status = *us.Status.DeepCopy()
		res.d.Annotations = us.DeepCopy().Annotations
	}
	return res, plan
}

// rsView is what is compared of a ReplicaSet after a sync.
type rsView struct {
	Replicas        int32
	Annotations     map[string]string
	Labels          map[string]string
	TemplateHash    string
	MinReadySeconds int32
}

func viewOf(rs *appsv1.ReplicaSet) rsView {
	return rsView{Replicas: *rs.Spec.Replicas, Annotations: rs.Annotations, Labels: rs.Labels,
		TemplateHash: rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey], MinReadySeconds: rs.Spec.MinReadySeconds}
}

func blankedStatus(d *appsv1.Deployment) appsv1.DeploymentStatus {
	s := *d.Status.DeepCopy()
	for i := range s.Conditions {
		s.Conditions[i].LastUpdateTime = metav1.Time{}
		s.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return s
}

func sortedCopy(xs []string) []string {
	ys := slices.Clone(xs)
	sort.Strings(ys)
	return ys
}

// compareDeploy compares one step. It returns "" and no diff when both
// agree, a documented deviation class, or a diff describing an unexplained
// disagreement.
func compareDeploy(in deployWorld, u, o deployResult) (known string, diff string) {
	var diffs []string
	var kinds []string
	add := func(kind, format string, args ...any) {
		kinds = append(kinds, kind)
		diffs = append(diffs, fmt.Sprintf(format, args...))
	}
	if (u.err != nil) != (o.err != nil) {
		add("err", "error: upstream %v; ours %v", u.err, o.err)
	}
	if !slices.Equal(sortedCopy(u.created), sortedCopy(o.created)) {
		add("created", "created: upstream %v; ours %v", u.created, o.created)
	}
	if !slices.Equal(sortedCopy(u.deleted), sortedCopy(o.deleted)) {
		add("deleted", "deleted: upstream %v; ours %v", u.deleted, o.deleted)
	}
	names := map[string]bool{}
	for n := range u.rss {
		names[n] = true
	}
	for n := range o.rss {
		names[n] = true
	}
	var rsDiffNames []string
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	}) {
		ur, uok := u.rss[n]
		or, ook := o.rss[n]
		if uok != ook {
			continue // reported as created/deleted
		}
		if d := diffOf(viewOf(ur), viewOf(or)); d != "" {
			rsDiffNames = append(rsDiffNames, n)
			add("rs", "rs %s %s", n, d)
		}
	}
	us, os := blankedStatus(u.d), blankedStatus(o.d)
	statusOnlyUnavailable := false
	if d := diffOf(us, os); d != "" {
		us2 := us
		us2.UnavailableReplicas = os.UnavailableReplicas
		statusOnlyUnavailable = reflect.DeepEqual(us2, os)
		add("status", "status %s", d)
	}
	if d := diffOf(u.d.Annotations, o.d.Annotations); d != "" {
		add("annotations", "deployment annotations %s", d)
	}
	if !slices.Equal(sortedCopy(u.events), sortedCopy(o.events)) {
		add("events", "events:\n  upstream %q\n  ours     %q", u.events, o.events)
	}
	if len(diffs) == 0 {
		return "", ""
	}
	// Classify against the documented deviations.
	if stuckScalingEvent(in.d, in.rss) && sizesUnchanged(in.rss, u.rss) {
		return devStuckScaling, ""
	}
	if recreateOldStatusPending(in) && sizesUnchanged(in.rss, o.rss) && len(o.created) == 0 {
		return devOldStatus, ""
	}
	for _, n := range o.refreshed {
		if ur, ok := u.rss[n]; !ok || !reflect.DeepEqual(ur.Annotations, o.rss[n].Annotations) {
			return devAnnotRefresh, ""
		}
	}
	if slices.Contains(kinds, "deleted") {
		inSpec := map[string]int32{}
		for _, rs := range in.rss {
			inSpec[rs.Name] = *rs.Spec.Replicas
		}
		for _, n := range u.deleted {
			if or, ok := o.rss[n]; ok && *or.Spec.Replicas > 0 && inSpec[n] == 0 {
				return devCleanupOwnWrite, ""
			}
		}
	}
	if len(kinds) == 1 && kinds[0] == "status" && statusOnlyUnavailable {
		// Ours must be the status of its final ReplicaSets; upstream's must
		// be stale with respect to its own final ReplicaSets.
		// Upstream's is max(0, Σ spec − available) over the ReplicaSets as
		// they were before this sync's scaling (plus any it created).
		var pre int32
		for _, rs := range in.rss {
			pre += *rs.Spec.Replicas
		}
		for _, n := range u.created {
			pre += *u.rss[n].Spec.Replicas
		}
		if o.d.Status.UnavailableReplicas == unavailableOf(o) && u.d.Status.UnavailableReplicas != unavailableOf(u) &&
			u.d.Status.UnavailableReplicas == max(0, pre-u.d.Status.AvailableReplicas) {
			return devStaleStatus, ""
		}
	}
	return "", strings.Join(diffs, "\n")
}

// stuckScalingEvent reports, with upstream's own helpers, whether the sync
// of d is the upstream livelock deployment.Sync deliberately breaks
// (deployment/doc.go, deployment/sync.go): an unpaused Deployment that is
// not RollingUpdate, a scaling event (an active ReplicaSet's
// desired-replicas annotation differs from spec.replicas, as upstream's
// isScalingEvent reads it), more than one active ReplicaSet, and a new
// ReplicaSet that is not saturated. Upstream's scale() writes nothing then,
// so its every later sync is the same scaling event; ours runs the rollout
// instead. The generated worlds carry no rollback annotation and no
// deletion timestamp, so those branches, which come first, need no test
// here.
func stuckScalingEvent(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) bool {
	if d.Spec.Paused || deploymentutil.IsRollingUpdate(d) {
		return false
	}
	newRS := deploymentutil.FindNewReplicaSet(d, cloneRSs(rss))
	active := controller.FilterActiveReplicaSets(cloneRSs(rss))
	if len(active) < 2 || deploymentutil.IsSaturated(d, newRS) {
		return false
	}
	for _, rs := range active {
		if n, ok := deploymentutil.GetDesiredReplicasAnnotation(discard, rs); ok && n != *d.Spec.Replicas {
			return true
		}
	}
	return false
}

// sizesUnchanged reports whether every ReplicaSet of in ends a sync (after)
// with the size and replicas annotations it started with: upstream's sync
// did nothing that could end a scaling event.
func sizesUnchanged(in []*appsv1.ReplicaSet, after map[string]*appsv1.ReplicaSet) bool {
	for _, rs := range in {
		a, ok := after[rs.Name]
		if !ok || *a.Spec.Replicas != *rs.Spec.Replicas ||
			a.Annotations[annDesired] != rs.Annotations[annDesired] || a.Annotations[annMax] != rs.Annotations[annMax] {
			return false
		}
	}
	return true
}

// unavailableOf is max(0, Σ spec − available) over the final ReplicaSets.
func unavailableOf(res deployResult) int32 {
	var spec int32
	for _, rs := range res.rss {
		spec += *rs.Spec.Replicas
	}
	return max(0, spec-res.d.Status.AvailableReplicas)
}

// advance turns a sync result into the next world: created ReplicaSets get
// a UID and a creation time, every ReplicaSet becomes fully available at
// its spec, and (Recreate) pods follow the ReplicaSet sizes.
func advance(w deployWorld, res deployResult, step int) deployWorld {
	nw := deployWorld{d: res.d.DeepCopy(), now: w.now}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range res.rss {
			if !yield(k) {
				return
			}
		}
	}) {
		rs := res.rss[n].DeepCopy()
		if rs.UID == "" {
			rs.UID = types.UID("uid-" + rs.Name)
		}
		if rs.CreationTimestamp.IsZero() {
			rs.CreationTimestamp = metav1.NewTime(w.now.Add(time.Duration(step+1) * time.Second))
		}
		if rs.Generation == 0 {
			rs.Generation = 1
		}
		spec := *rs.Spec.Replicas
		rs.Status = appsv1.ReplicaSetStatus{Replicas: spec, FullyLabeledReplicas: spec, ReadyReplicas: spec, AvailableReplicas: spec,
			ObservedGeneration: rs.Generation, TerminatingReplicas: ptr(int32(0))}
		nw.rss = append(nw.rss, rs)
		if nw.d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			nw.pods = append(nw.pods, podsFor(rs, spec, nil)...)
		}
	}
	return nw
}

func TestDeploymentSync(t *testing.T) {
	ctx := quietCtx()
	differential(t, 7,
		func(r *rand.Rand) deployWorld { return genDeployWorld(r, time.Now()) },
		describeDeployWorld,
		func(w deployWorld) verdict {
			u := upstreamDeploySync(ctx, w.clone())
			o := oursDeploySync(w.clone())
			known, diff := compareDeploy(w, u, o)
			if diff != "" {
				if dev, ok := staleStatusesAgree(ctx, w, o); ok {
					known, diff = dev, ""
				}
			}
			switch {
			case diff != "":
				return disagree("%s", diff)
			case known != "":
				return knownDeviation(known)
			}
			return agree()
		})
}

// TestDeploymentSyncMultiStep syncs both controllers up to 10 times, each
// on its own world (the previous step's results, then every ReplicaSet made
// available at its spec), comparing every step. A documented deviation
// other than the stale intermediate status ends the case (the worlds then
// legitimately diverge).
func TestDeploymentSyncMultiStep(t *testing.T) {
	ctx := quietCtx()
	n := caseCount(t, 40)
	if os.Getenv(envLong) == "1" && os.Getenv(envN) == "" {
		n = 10_000
	}
	differentialN(t, n,
		func(r *rand.Rand) deployWorld { return genDeployWorld(r, time.Now()) },
		describeDeployWorld,
		func(w deployWorld) verdict {
			uw, ow := w.clone(), w.clone()
			var stale bool
			for step := range 10 {
				u := upstreamDeploySync(ctx, uw.clone())
				o := oursDeploySync(ow.clone())
				known, diff := compareDeploy(uw, u, o)
				if diff != "" {
					if dev, ok := staleStatusesAgree(ctx, uw, o); ok {
						known, diff = dev, ""
					}
				}
				switch {
				case diff != "":
					return disagree("step %d:\n%s\nupstream world at this step:\n%s", step, diff, describeDeployWorld(uw))
				case known == devStaleStatus:
					stale = true
				case known != "":
					return knownDeviation(known)
				}
				if !u.writes && !o.writes {
					break
				}
				uw, ow = advance(uw, u, step), advance(ow, o, step)
			}
			if stale {
				return knownDeviation(devStaleStatus)
			}
			return agree()
		})
}
