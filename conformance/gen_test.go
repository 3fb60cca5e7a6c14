package conformance

import (
	"fmt"
	"math"
	mathrand "math/rand"
	"math/rand/v2"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// The generators below build the objects the controllers see, biased
// towards the edges: 0 and huge replica counts, 0/0 fenceposts, malformed
// percentages, missing and invalid annotations, equal timestamps and names.
// They are seeded (math/rand/v2) and use no clock: genNow is the "now" of
// every generated world.

// genNow is the fixed instant generated timestamps are relative to.
var genNow = time.Date(2026, 5, 22, 12, 0, 0, 0, time.UTC)

func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func ptr[T any](v T) *T { return &v }

// genCount is a replica count: mostly small, sometimes 0, sometimes huge.
func genCount(r *rand.Rand) int32 {
	switch x := r.IntN(100); {
	case x < 10:
		return 0
	case x < 60:
		return int32(1 + r.IntN(10))
	case x < 85:
		return int32(11 + r.IntN(990))
	case x < 95:
		return int32(1000 + r.IntN(1_000_000))
	default:
		return pick(r, int32(math.MaxInt32), int32(math.MaxInt32-1), int32(math.MaxInt32/2), int32(1<<30), int32(math.MaxInt32/100))
	}
}

// genIntOrPercent is a maxSurge/maxUnavailable value; valid=false allows
// values API validation rejects (negative, malformed, non-percent strings).
func genIntOrPercent(r *rand.Rand, valid bool) *intstr.IntOrString {
	x := r.IntN(100)
	if !valid && x < 15 {
		v := pick(r,
			intstr.FromString("abc%"), intstr.FromString("5"), intstr.FromString(""),
			intstr.FromString("%"), intstr.FromString("-5%"), intstr.FromInt32(-1),
			intstr.FromString("1.5%"), intstr.FromString("+5%"), intstr.FromString(" 5%"),
			intstr.FromInt32(math.MaxInt32), intstr.FromString("1000000000%"),
			intstr.IntOrString{Type: 7, IntVal: 3}, intstr.FromString("99999999999%"))
		return &v
	}
	switch {
	case x < 25:
		return nil
	case x < 40:
		v := intstr.FromInt32(0)
		return &v
	case x < 60:
		v := intstr.FromInt32(int32(r.IntN(12)))
		return &v
	case x < 65:
		v := intstr.FromInt32(int32(r.IntN(100_000)))
		return &v
	case x < 72:
		v := intstr.FromString("0%")
		return &v
	case x < 95:
		v := intstr.FromString(strconv.Itoa(r.IntN(101)) + "%")
		return &v
	default:
		v := intstr.FromString(strconv.Itoa(101+r.IntN(400)) + "%")
		return &v
	}
}

// templatePool are the pod templates Deployments and ReplicaSets pick
// from, so that templates are often equal, equal modulo the hash label,
// or semantically equal (1 vs 1000m CPU) but not byte-equal.
func templatePool(i int, withHash string) corev1.PodTemplateSpec {
	labels := map[string]string{"app": "web"}
	if withHash != "" {
		labels[appsv1.DefaultDeploymentUniqueLabelKey] = withHash
	}
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "web",
			Image: "nginx:1.27",
		}}},
	}
	switch i % 6 {
	case 1:
		t.Spec.Containers[0].Image = "nginx:1.28"
	case 2:
		t.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-05-01T00:00:00Z"}
	case 3:
		t.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	case 4:
		t.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")}
	case 5:
		t.Labels["tier"] = "frontend"
	}
	return t
}

// genTime is a timestamp near genNow on a coarse grid, so ties are common.
// It is zero with a small probability.
func genTime(r *rand.Rand) metav1.Time {
	if chance(r, 0.03) {
		return metav1.Time{}
	}
	return metav1.NewTime(genNow.Add(-time.Duration(r.IntN(8)) * time.Hour))
}

// genDeploymentOpts tunes genDeployment.
type genDeploymentOpts struct {
	// valid restricts values to what API validation accepts, with a
	// non-nil RollingUpdate when the strategy is RollingUpdate.
	valid bool
}

// genDeployment builds a Deployment with random spec, annotations and
// status.
func genDeployment(r *rand.Rand, o genDeploymentOpts) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       "web",
			Namespace:  "ns",
			UID:        types.UID("d-uid"),
			Generation: int64(1 + r.IntN(5)),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(genCount(r)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: templatePool(r.IntN(6), ""),
			Paused:   chance(r, 0.15),
		},
	}
	switch x := r.IntN(100); {
	case x < 80:
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
		if o.valid || chance(r, 0.97) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
				MaxSurge:       genIntOrPercent(r, o.valid),
				MaxUnavailable: genIntOrPercent(r, o.valid),
			}
		}
	case x < 95 || o.valid:
		d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	default:
		d.Spec.Strategy.Type = pick(r, appsv1.DeploymentStrategyType(""), "Canary")
	}
	switch x := r.IntN(10); {
	case x < 2:
	case x < 3:
		d.Spec.RevisionHistoryLimit = ptr(int32(math.MaxInt32))
	default:
		d.Spec.RevisionHistoryLimit = ptr(int32(r.IntN(11)))
	}
	switch x := r.IntN(10); {
	case x < 2:
	case x < 3:
		d.Spec.ProgressDeadlineSeconds = ptr(int32(math.MaxInt32))
	default:
		d.Spec.ProgressDeadlineSeconds = ptr(int32(pick(r, 1, 10, 60, 600, 3600)))
	}
	d.Spec.MinReadySeconds = pick(r, int32(0), 0, 5, 30)
	d.Annotations = genDeploymentAnnotations(r)
	d.Status = genDeploymentStatus(r, *d.Spec.Replicas, d.Generation)
	return d
}

func genDeploymentAnnotations(r *rand.Rand) map[string]string {
	if chance(r, 0.2) {
		return nil
	}
	a := map[string]string{}
	if chance(r, 0.6) {
		a["deployment.kubernetes.io/revision"] = pick(r, "1", "2", "3", "7", "", "x")
	}
	if chance(r, 0.15) {
		a[appsv1.DeprecatedRollbackTo] = pick(r, "0", "1", "2", "5", "", "x", "-1")
	}
	if chance(r, 0.4) {
		a["kubernetes.io/change-cause"] = pick(r, "image update", "scale")
	}
	if chance(r, 0.2) {
		a["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
	}
	if chance(r, 0.2) {
		a["deployment.kubernetes.io/desired-replicas"] = "3"
	}
	if chance(r, 0.3) {
		a["team"] = pick(r, "a", "b")
	}
	return a
}

// genDeploymentStatus is a plausible (sometimes implausible) status.
func genDeploymentStatus(r *rand.Rand, D int32, gen int64) appsv1.DeploymentStatus {
	small := func() int32 {
		if chance(r, 0.5) {
			return D
		}
		return int32(r.IntN(12))
	}
	st := appsv1.DeploymentStatus{
		ObservedGeneration: gen - int64(r.IntN(2)),
		Replicas:           small(),
		UpdatedReplicas:    small(),
		ReadyReplicas:      small(),
		AvailableReplicas:  small(),
	}
	if chance(r, 0.2) {
		st.CollisionCount = ptr(int32(r.IntN(3)))
	}
	if chance(r, 0.3) {
		st.TerminatingReplicas = ptr(int32(r.IntN(3)))
	}
	st.Conditions = genConditions(r)
	return st
}

var progressingReasons = []string{
	"NewReplicaSetCreated", "FoundNewReplicaSet", "NewReplicaSetAvailable", "ReplicaSetUpdated",
	"ProgressDeadlineExceeded", "DeploymentPaused", "DeploymentResumed", "ReplicaSetCreateError",
}

// genCondition is a random Deployment condition.
func genCondition(r *rand.Rand) appsv1.DeploymentCondition {
	t := pick(r, appsv1.DeploymentProgressing, appsv1.DeploymentAvailable, appsv1.DeploymentReplicaFailure)
	reason := pick(r, progressingReasons...)
	if t == appsv1.DeploymentAvailable {
		reason = pick(r, "MinimumReplicasAvailable", "MinimumReplicasUnavailable")
	}
	if t == appsv1.DeploymentReplicaFailure {
		reason = pick(r, "FailedCreate", "FailedDelete")
	}
	return appsv1.DeploymentCondition{
		Type:               t,
		Status:             pick(r, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown),
		Reason:             reason,
		Message:            pick(r, "", "m1", "m2"),
		LastUpdateTime:     genTime(r),
		LastTransitionTime: genTime(r),
	}
}

func genConditions(r *rand.Rand) []appsv1.DeploymentCondition {
	n := r.IntN(4)
	if n == 0 {
		return nil
	}
	cs := make([]appsv1.DeploymentCondition, n)
	for i := range cs {
		cs[i] = genCondition(r)
	}
	return cs
}

// genRSOpts tunes genReplicaSets.
type genRSOpts struct {
	// sane keeps status ≤ spec and annotations parseable most of the time.
	sane bool
}

// genReplicaSets builds 0..max ReplicaSets owned by d, with ties in
// creation timestamps and names, templates equal (modulo hash) to d's or
// not, and revision and replicas annotations that are missing, valid,
// duplicated or invalid.
func genReplicaSets(r *rand.Rand, d *appsv1.Deployment, maxN int, o genRSOpts) []*appsv1.ReplicaSet {
	n := r.IntN(maxN + 1)
	rss := make([]*appsv1.ReplicaSet, n)
	for i := range rss {
		rss[i] = genReplicaSet(r, d, i, o)
	}
	return rss
}

func genReplicaSet(r *rand.Rand, d *appsv1.Deployment, i int, o genRSOpts) *appsv1.ReplicaSet {
	hash := fmt.Sprintf("h%d", r.IntN(6))
	spec := genRSCount(r, d)
	rs := &appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              d.Name + "-" + hash,
			Namespace:         d.Namespace,
			UID:               types.UID(fmt.Sprintf("rs-uid-%d", i)),
			Labels:            map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash},
			CreationTimestamp: genTime(r),
			Generation:        int64(1 + r.IntN(3)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr(spec),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}},
		},
	}
	if chance(r, 0.5) {
		// Same template as the Deployment, plus the hash label.
		rs.Spec.Template = *d.Spec.Template.DeepCopy()
		rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	} else {
		rs.Spec.Template = templatePool(r.IntN(6), hash)
	}
	// Status.
	st := &rs.Status
	if o.sane || chance(r, 0.8) {
		st.Replicas = capped(r, spec)
		st.ReadyReplicas = capped(r, st.Replicas)
		st.AvailableReplicas = capped(r, st.ReadyReplicas)
		st.FullyLabeledReplicas = capped(r, st.Replicas)
	} else {
		st.Replicas = genCount(r)
		st.ReadyReplicas = genCount(r)
		st.AvailableReplicas = genCount(r)
	}
	st.ObservedGeneration = rs.Generation - int64(r.IntN(2))
	if chance(r, 0.1) {
		st.ObservedGeneration = 0
	}
	if chance(r, 0.7) {
		st.TerminatingReplicas = ptr(int32(r.IntN(3)))
	}
	if chance(r, 0.1) {
		st.Conditions = []appsv1.ReplicaSetCondition{{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			Reason:             pick(r, "FailedCreate", "FailedDelete"),
			Message:            "quota",
			LastTransitionTime: genTime(r),
		}}
	}
	rs.Annotations = genRSAnnotations(r, d, o)
	if chance(r, 0.03) {
		rs.DeletionTimestamp = ptr(metav1.NewTime(genNow))
	}
	return rs
}

// genRSCount is a ReplicaSet size relative to d's replicas.
func genRSCount(r *rand.Rand, d *appsv1.Deployment) int32 {
	D := *d.Spec.Replicas
	switch x := r.IntN(10); {
	case x < 3:
		return 0
	case x < 5:
		return D
	case x < 6 && D > 0:
		return D/2 + int32(r.IntN(3))
	default:
		return int32(r.IntN(12))
	}
}

// capped is a random value in [0, n], usually n.
func capped(r *rand.Rand, n int32) int32 {
	if n <= 0 || chance(r, 0.5) {
		return max(n, 0)
	}
	return int32(r.Int64N(int64(n) + 1))
}

func genRSAnnotations(r *rand.Rand, d *appsv1.Deployment, o genRSOpts) map[string]string {
	if chance(r, 0.1) {
		return nil
	}
	a := map[string]string{}
	D := *d.Spec.Replicas
	if chance(r, 0.85) {
		if o.sane || chance(r, 0.85) {
			a["deployment.kubernetes.io/revision"] = strconv.Itoa(1 + r.IntN(6))
		} else {
			a["deployment.kubernetes.io/revision"] = pick(r, "", "x", "-3", "0", "9223372036854775807", "99999999999999999999")
		}
	}
	if chance(r, 0.2) {
		a["deployment.kubernetes.io/revision-history"] = pick(r, "", "1", "1,2", "1,2,3,4")
	}
	if chance(r, 0.8) {
		if o.sane || chance(r, 0.85) {
			a["deployment.kubernetes.io/desired-replicas"] = strconv.Itoa(int(pick(r, D, D, int32(r.IntN(12)))))
		} else {
			a["deployment.kubernetes.io/desired-replicas"] = pick(r, "", "x", "-1", "2147483648", "4294967296", "+3", "03")
		}
	}
	if chance(r, 0.8) {
		if o.sane || chance(r, 0.85) {
			a["deployment.kubernetes.io/max-replicas"] = strconv.Itoa(int(pick(r, D, D+int32(r.IntN(4)), int32(r.IntN(15)))))
		} else {
			a["deployment.kubernetes.io/max-replicas"] = pick(r, "", "x", "0", "-1", "2147483648", "4294967296")
		}
	}
	if chance(r, 0.3) {
		a["kubernetes.io/change-cause"] = pick(r, "image update", "old cause")
	}
	return a
}

// cloneRSs deep-copies a list, preserving nil entries.
func cloneRSs(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if rss == nil {
		return nil
	}
	out := make([]*appsv1.ReplicaSet, len(rss))
	for i, rs := range rss {
		out[i] = rs.DeepCopy()
	}
	return out
}

// describeRSs renders the fields of ReplicaSets the comparisons look at.
func describeRSs(rss []*appsv1.ReplicaSet) string {
	s := ""
	for i, rs := range rss {
		if rs == nil {
			s += fmt.Sprintf("  [%d] nil\n", i)
			continue
		}
		s += fmt.Sprintf("  [%d] %s uid=%s created=%s spec=%s status={r:%d ready:%d avail:%d term:%s obsGen:%d} gen=%d ann=%v tplImage=%s tplLabels=%v del=%v\n",
			i, rs.Name, rs.UID, rs.CreationTimestamp.UTC().Format(time.RFC3339), fmtPtr(rs.Spec.Replicas),
			rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas, fmtPtr(rs.Status.TerminatingReplicas),
			rs.Status.ObservedGeneration, rs.Generation, rs.Annotations, firstImage(&rs.Spec.Template), rs.Spec.Template.Labels,
			rs.DeletionTimestamp != nil)
	}
	return s
}

func firstImage(t *corev1.PodTemplateSpec) string {
	if len(t.Spec.Containers) == 0 {
		return ""
	}
	return t.Spec.Containers[0].Image
}

func fmtPtr[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func fmtIOS(v *intstr.IntOrString) string {
	if v == nil {
		return "nil"
	}
	if v.Type == intstr.Int {
		return fmt.Sprintf("int(%d)", v.IntVal)
	}
	if v.Type == intstr.String {
		return fmt.Sprintf("%q", v.StrVal)
	}
	return fmt.Sprintf("{Type:%d}", v.Type)
}

// describeDeployment renders the fields of a Deployment the comparisons
// look at.
func describeDeployment(d *appsv1.Deployment) string {
	if d == nil {
		return "  deployment: nil\n"
	}
	strat := string(d.Spec.Strategy.Type)
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		strat += fmt.Sprintf(" maxSurge=%s maxUnavailable=%s", fmtIOS(ru.MaxSurge), fmtIOS(ru.MaxUnavailable))
	} else if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		strat += " rollingUpdate=nil"
	}
	return fmt.Sprintf("  deployment: replicas=%s strategy=%s gen=%d paused=%v revHistory=%s deadline=%s ann=%v tplImage=%s\n  status: %+v\n",
		fmtPtr(d.Spec.Replicas), strat, d.Generation, d.Spec.Paused, fmtPtr(d.Spec.RevisionHistoryLimit),
		fmtPtr(d.Spec.ProgressDeadlineSeconds), d.Annotations, firstImage(&d.Spec.Template), d.Status)
}

// genPodOpts tunes genPods.
type genPodOpts struct {
	// nodes is the number of distinct node names ("" included).
	nodes int
}

// genPod builds a pod owned by rs (or orphaned, or owned by someone else)
// with a random phase, readiness, node, deletion cost, restarts (including
// sidecars), creation time and deletion timestamp.
func genPod(r *rand.Rand, rs *appsv1.ReplicaSet, i int, o genPodOpts) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s-p%d", rs.Name, i),
			Namespace:         rs.Namespace,
			UID:               types.UID(fmt.Sprintf("pod-uid-%04d", i)),
			Labels:            map[string]string{},
			CreationTimestamp: metav1.NewTime(genNow.Add(-time.Duration(r.IntN(1<<uint(r.IntN(20)))) * time.Second)),
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}
	for k, v := range rs.Spec.Template.Labels {
		p.Labels[k] = v
	}
	if chance(r, 0.05) {
		p.Labels = map[string]string{"app": "other"}
	}
	switch x := r.IntN(100); {
	case x < 88:
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	case x < 94:
		// orphan
	default:
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "other", UID: "other-uid", Controller: ptr(true)}}
	}
	if o.nodes > 0 {
		if n := r.IntN(o.nodes); n > 0 {
			p.Spec.NodeName = fmt.Sprintf("node-%d", n)
		}
	}
	p.Status.Phase = pick(r, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodPending, corev1.PodUnknown,
		corev1.PodSucceeded, corev1.PodFailed, corev1.PodPhase(""))
	if chance(r, 0.7) {
		status := corev1.ConditionTrue
		if chance(r, 0.2) {
			status = pick(r, corev1.ConditionFalse, corev1.ConditionUnknown)
		}
		ltt := metav1.NewTime(genNow.Add(-time.Duration(r.IntN(1<<uint(r.IntN(22)))) * time.Second))
		if chance(r, 0.05) {
			ltt = metav1.Time{}
		}
		if chance(r, 0.05) {
			ltt = metav1.NewTime(genNow.Add(time.Minute)) // clock skew: in the future
		}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: ltt})
	}
	if chance(r, 0.25) {
		p.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": pick(r,
			"0", "1", "-1", "100", "-100", "2147483647", "-2147483648", "2147483648", "+5", "05", "00", "x", "", " 1", "1.5", "-0")}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: int32(pick(r, 0, 0, 0, 1, 2, 5))}}
	if chance(r, 0.3) {
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []corev1.Container{{Name: "sidecar", RestartPolicy: &always}, {Name: "init"}}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{
			{Name: "sidecar", RestartCount: int32(pick(r, 0, 0, 1, 3))},
			{Name: "init", RestartCount: int32(pick(r, 0, 4))},
		}
	}
	if chance(r, 0.08) {
		p.DeletionTimestamp = ptr(metav1.NewTime(genNow.Add(-time.Minute)))
	}
	return p
}

func genPods(r *rand.Rand, rs *appsv1.ReplicaSet, n int, o genPodOpts) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = genPod(r, rs, i, o)
	}
	return pods
}

// describePods renders the pod fields the comparisons look at.
func describePods(pods []*corev1.Pod) string {
	s := ""
	for i, p := range pods {
		ready, ltt := "-", ""
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready, ltt = string(c.Status), c.LastTransitionTime.UTC().Format(time.RFC3339)
			}
		}
		var restarts, side []int32
		for _, c := range p.Status.ContainerStatuses {
			restarts = append(restarts, c.RestartCount)
		}
		for _, c := range p.Status.InitContainerStatuses {
			side = append(side, c.RestartCount)
		}
		s += fmt.Sprintf("  [%d] %s uid=%s node=%q phase=%q ready=%s@%s cost=%q restarts=%v init=%v created=%s deleting=%v owner=%v\n",
			i, p.Name, p.UID, p.Spec.NodeName, p.Status.Phase, ready, ltt, p.Annotations["controller.kubernetes.io/pod-deletion-cost"],
			restarts, side, p.CreationTimestamp.UTC().Format(time.RFC3339), p.DeletionTimestamp != nil, len(p.OwnerReferences) > 0)
	}
	return s
}

// genTemplate is a random pod template filled by randfill (most optional
// fields nil), for hashing and equality: it covers fields the hand-written
// pool does not.
func genTemplate(r *rand.Rand) corev1.PodTemplateSpec {
	var t corev1.PodTemplateSpec
	randfill.New().RandSource(mathrand.NewSource(r.Int64())).NilChance(0.85).NumElements(0, 2).MaxDepth(8).Fill(&t)
	if chance(r, 0.5) {
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = pick(r, "h1", "h2")
	}
	return t
}

// mutateTemplate makes a small change to t, sometimes one that only
// touches the hash label or is semantically a no-op.
func mutateTemplate(r *rand.Rand, t *corev1.PodTemplateSpec) {
	switch r.IntN(6) {
	case 0:
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "other"
	case 1:
		delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	case 2:
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels["extra"] = "x"
	case 3:
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: "added"})
	case 4:
		// nil vs empty label map: semantically different for DeepEqual.
		if len(t.Labels) == 0 {
			if t.Labels == nil {
				t.Labels = map[string]string{}
			} else {
				t.Labels = nil
			}
		}
	default:
		t.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
}
