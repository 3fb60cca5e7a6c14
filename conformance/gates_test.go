package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// setUpstreamGates sets upstream's process-wide gates to g for the rest of
// t, as upstream's own tests do (featuregatetesting).
func setUpstreamGates(t *testing.T, g features.Gates) {
	t.Helper()
	overrides := featuregatetesting.FeatureOverrides{}
	for _, s := range features.Known() {
		overrides[featuregate.Feature(s.Name)] = g.Enabled(s.Name)
	}
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, overrides)
}

// TestDeploymentCalculateStatusGateOff is TestDeploymentCalculateStatus
// with DeploymentReplicaSetTerminatingReplicas off on both sides.
func TestDeploymentCalculateStatusGateOff(t *testing.T) {
	setUpstreamGates(t, features.Gates{DeploymentReplicaSetTerminatingReplicas: features.Off})
	differential(t, 2,
		func(r *rand.Rand) newRSIn {
			in, i := genNewRSIn(r)
			in.d = genDeployment(r, genDeploymentOpts{valid: true})
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
			o, err := rollout.StatusOptions{NoTerminatingReplicas: true}.CalculateStatus(in.d, in.rss, newRS, time.Now())
			if fatal(err) {
				return disagree("ours failed: %v", err)
			}
			if o.TerminatingReplicas != nil {
				return disagree("terminatingReplicas = %d with the gate off", *o.TerminatingReplicas)
			}
			blankFresh(&u, since)
			blankFresh(&o, since)
			if diff := diffOf(u, o); diff != "" {
				return disagree("status %s", diff)
			}
			return agree()
		})
}

// TestReplicaSetSyncGatesOff is TestReplicaSetSync with PodDeletionCost
// and DeploymentReplicaSetTerminatingReplicas off on both sides: the same
// pods created, deleted (ranked without their deletion cost) and the same
// status written (terminatingReplicas nil).
func TestReplicaSetSyncGatesOff(t *testing.T) {
	gates := features.Gates{PodDeletionCost: features.Off, DeploymentReplicaSetTerminatingReplicas: features.Off}
	setUpstreamGates(t, gates)
	ctx := quietCtx()
	const orderDependent = "deletion choice depends on informer order (ties)"
	differential(t, 20,
		func(r *rand.Rand) rsWorld { return genRSWorld(r, time.Now().Truncate(time.Second)) },
		describeRSWorld,
		func(w rsWorld) verdict {
			h := newUpstreamRSHarness(ctx, w)
			u, panicked := catch(func() syncOutcome { return h.sync(ctx) })
			o := newOursRSHarnessGates(t, w, true, func(pods []*corev1.Pod) reconcile.Lister[*corev1.Pod] { return podReader{pods} }, gates).sync(ctx)
			if panicked {
				return knownDeviation(devUpstreamPanics + " (age-ratio metric divides by zero)")
			}
			if o.status != nil && o.status.TerminatingReplicas != nil {
				return disagree("ours wrote terminatingReplicas with the gate off: %v", o)
			}
			if u.created != o.created || !slices.Equal(u.patched, o.patched) || u.err != o.err || !sameStatus(u.status, o.status) {
				return disagree("upstream: %v\nours:     %v\nstatus %s", u, o, diffOf(u.status, o.status))
			}
			if !slices.Equal(u.deleted, o.deleted) {
				if deletionReachableWith(w.rs, w.pods, u.deleted, gates) {
					return knownDeviation(orderDependent)
				}
				return disagree("deleted: upstream %v; ours %v", u.deleted, o.deleted)
			}
			return agree()
		})
}

// deletionReachableWith reports whether our ranking with gates picks want
// among the active pods rs selects and controls (or orphans), for some
// order of them (50 shuffles).
func deletionReachableWith(rs *appsv1.ReplicaSet, pods []*corev1.Pod, want []string, gates features.Gates) bool {
	var active, related []*corev1.Pod
	sel := labels.SelectorFromSet(rs.Spec.Selector.MatchLabels)
	for _, p := range pods {
		if !replicaset.IsPodActive(p) {
			continue
		}
		related = append(related, p)
		if ref := metav1.GetControllerOf(p); (ref == nil || ref.UID == rs.UID) && sel.Matches(labels.Set(p.Labels)) {
			active = append(active, p)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		r.Shuffle(len(active), func(i, j int) { active[i], active[j] = active[j], active[i] })
		ranked := must(replicaset.RankForDeletionWith(active, related, time.Now(), gates))
		if len(ranked) < len(want) {
			return false
		}
		var names []string
		for _, p := range ranked[:len(want)] {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		if slices.Equal(names, want) {
			return true
		}
	}
	return false
}

// lockstep is a memcluster cluster whose Deployment and ReplicaSet syncs
// are run one at a time, each by upstream's controller (on a fake
// clientset holding the same objects, with upstream's gates) and by
// ctrlkit's (with the same gates), compared, and ctrlkit's writes applied.
// The cluster's clock starts an hour back: every pod's age is then in the
// same log2 bucket of the deletion ranking for both sides (which read the
// wall clock there), whatever the few seconds the test takes.
type lockstep struct {
	t       *testing.T
	ctx     context.Context
	fc      *clock.Fake
	c       *memcluster.Cluster
	kubelet *memcluster.Kubelet
	client  *recordingMem
	gates   features.Gates
	steps   int
	known   map[string]int
	// deleted counts the pods ctrlkit deleted, decided the same as
	// upstream's (or equally ranked).
	deleted int
}

func newLockstep(t *testing.T) *lockstep {
	fc := clock.NewFake(time.Now().Add(-time.Hour).Truncate(time.Second))
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 28})
	k := memcluster.NewKubelet(c, memcluster.KubeletConfig{Model: memcluster.FixedModel(memcluster.PodBehavior{
		StartDelay: time.Second, ReadyDelay: time.Second, ShutdownDelay: 4 * time.Second})})
	return &lockstep{t: t, ctx: quietCtx(), fc: fc, c: c, kubelet: k, client: &recordingMem{ControllerClient: memcluster.ControllerClient{Cluster: c}}, known: map[string]int{}}
}

// recordingMem writes to memcluster and records the pod writes and
// ReplicaSet status writes of one ReplicaSet sync.
type recordingMem struct {
	memcluster.ControllerClient
	mu  sync.Mutex
	out syncOutcome
}

func (r *recordingMem) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	p, err := r.ControllerClient.CreatePod(ctx, pod)
	if err == nil {
		r.mu.Lock()
		r.out.created++
		r.mu.Unlock()
	}
	return p, err
}

func (r *recordingMem) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	r.mu.Lock()
	r.out.deleted = append(r.out.deleted, name)
	r.mu.Unlock()
	return r.ControllerClient.DeletePod(ctx, namespace, name, uid)
}

func (r *recordingMem) UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	st := rs.Status
	r.mu.Lock()
	r.out.status = &st
	r.mu.Unlock()
	return r.ControllerClient.UpdateReplicaSetStatus(ctx, rs)
}

func (r *recordingMem) take() syncOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.out
	r.out = syncOutcome{}
	sort.Strings(o.deleted)
	return o
}

// snapshot lists the cluster.
func (l *lockstep) snapshot() (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod) {
	l.t.Helper()
	ds, _, err := l.c.Deployments("ns").List(l.ctx, metav1.ListOptions{})
	if err != nil || len(ds) != 1 {
		l.t.Fatalf("listing the Deployment: %v (%d)", err, len(ds))
	}
	rss, _, err := l.c.ReplicaSets("ns").List(l.ctx, metav1.ListOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	pods, _, err := l.c.Pods("ns").List(l.ctx, metav1.ListOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return ds[0], rss, pods
}

// step syncs the Deployment, then each of its ReplicaSets, on both
// sides, compares and applies ctrlkit's writes; then lets a second pass
// on the cluster's clock.
func (l *lockstep) step() {
	l.t.Helper()
	l.steps++
	d, rss, pods := l.snapshot()
	w := deployWorld{d: d, rss: rss, now: time.Now()}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		w.pods = pods
	}
	u := upstreamDeploySync(l.ctx, w.clone())
	o, plan := oursDeployPlan(w.clone(), l.gates, time.Now())
	known, diff := compareDeploy(w, u, o)
	if diff != "" {
		if dev, ok := staleStatusesAgree(l.ctx, w, o); ok {
			known, diff = dev, ""
		}
	}
	switch {
	case diff != "":
		l.t.Errorf("step %d, gates %q: Deployment sync disagrees:\n%s\ninput:\n%s", l.steps, l.gates, diff, describeDeployWorld(w))
	case known != "":
		l.known[known]++
	}
	if _, err := deployment.WritePlan(l.ctx, l.client, nil, plan); err != nil {
		l.t.Fatalf("step %d: applying ctrlkit's Deployment plan: %v", l.steps, err)
	}
	_, rss, pods = l.snapshot()
	for _, rs := range rss {
		l.syncReplicaSet(rs, rss, pods)
		_, rss, pods = l.snapshot()
	}
	l.fc.Step(time.Second)
	l.kubelet.Sync()
}

func (l *lockstep) syncReplicaSet(rs *appsv1.ReplicaSet, rss []*appsv1.ReplicaSet, pods []*corev1.Pod) {
	l.t.Helper()
	var siblings []*appsv1.ReplicaSet
	for _, other := range rss {
		if other.UID != rs.UID {
			siblings = append(siblings, other)
		}
	}
	w := rsWorld{rs: rs, siblings: siblings, pods: pods}
	u, panicked := catch(func() syncOutcome { return newUpstreamRSHarnessNamed(l.ctx, w).sync(l.ctx) })
	byKey := map[types.NamespacedName]*appsv1.ReplicaSet{}
	for _, x := range rss {
		byKey[types.NamespacedName{Namespace: x.Namespace, Name: x.Name}] = x
	}
	rec, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
		ReplicaSets: rsReader{byKey}, Pods: podReader{pods}, Client: l.client, Clock: clock.Real{},
		EagerStatus: true, FeatureGates: l.gates,
	})
	if err != nil {
		l.t.Fatal(err)
	}
	l.client.take()
	_, err = rec.Reconcile(l.ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name})
	o := l.client.take()
	o.err = err != nil
	l.deleted += len(o.deleted)
	switch {
	case panicked:
		l.known[devUpstreamPanics]++
	case u.created != o.created || u.err != o.err || !sameStatus(u.status, o.status):
		l.t.Errorf("step %d, gates %q: ReplicaSet %s sync disagrees:\nupstream: %v\nours:     %v\nstatus %s", l.steps, l.gates, rs.Name, u, o, diffOf(u.status, o.status))
	case !slices.Equal(u.deleted, o.deleted):
		if deletionReachableWith(rs, pods, u.deleted, l.gates) {
			l.known["deletion choice depends on informer order (ties)"]++
			return
		}
		l.t.Errorf("step %d, gates %q: ReplicaSet %s deleted: upstream %v; ours %v", l.steps, l.gates, rs.Name, u.deleted, o.deleted)
	}
}

// newUpstreamRSHarnessNamed is newUpstreamRSHarness whose fake clientset
// generates the names of created pods, as the API server does (memcluster
// does, on ctrlkit's side), so that a batch of creations does not fail
// with AlreadyExists.
func newUpstreamRSHarnessNamed(ctx context.Context, w rsWorld) *upstreamRSHarness {
	h := newUpstreamRSHarness(ctx, w)
	var n int
	h.client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if p, ok := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod); ok && p.Name == "" {
			n++
			p.Name = fmt.Sprintf("%s%05d", p.GenerateName, n)
		}
		return false, nil, nil
	})
	return h
}

// setGates switches the gates of both sides for the rest of t.
func (l *lockstep) setGates(t *testing.T, g features.Gates) {
	t.Helper()
	setUpstreamGates(t, g)
	l.gates = g
}

// setImage changes the Deployment's image.
func (l *lockstep) setImage(img string) {
	l.t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, img)
	if _, err := l.c.Deployments("ns").Patch(l.ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		l.t.Fatal(err)
	}
}

// setCosts gives the active pods deletion costs in name order: -100,
// 1000, 0, 500, ..., so that honouring them changes which go first.
func (l *lockstep) setCosts() {
	l.t.Helper()
	_, _, pods := l.snapshot()
	costs := []string{"-100", "1000", "0", "500", "-7", "3"}
	for i, p := range pods {
		if !replicaset.IsPodActive(p) {
			continue
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, replicaset.PodDeletionCostAnnotation, costs[i%len(costs)])
		if _, err := l.c.Pods("ns").Patch(l.ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			l.t.Fatal(err)
		}
	}
}

// TestGatesMidRollout switches each gate off, on and off again while a
// Deployment of 6 rolls out on memcluster (a new image in each phase,
// pods given deletion costs, pods shutting down for 4 s so that some are
// always terminating), and compares every sync of both controllers with
// upstream's decisions under the same gate: the Deployment's and
// ReplicaSets' statuses (terminatingReplicas nil while the gate is off,
// back to a count when it is on), the pods created and the pods deleted.
// StaleControllerConsistencyReplicaSet changes when a controller syncs,
// not what it decides: in lockstep both decide the same with it on and
// off (its effect is tested on a running controller, TestControllerStaleConsistencyGate
// in package replicaset).
func TestGatesMidRollout(t *testing.T) {
	for _, gate := range []features.Name{features.DeploymentReplicaSetTerminatingReplicas, features.PodDeletionCost, features.StaleControllerConsistencyReplicaSet} {
		t.Run(string(gate), func(t *testing.T) {
			l := newLockstep(t)
			surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(2)
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr(int32(6)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
					},
					Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
						RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
				},
			}
			if _, err := l.c.Deployments("ns").Create(l.ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for range 6 {
				l.step()
			}
			for i, on := range []bool{false, true, false} {
				t.Run(fmt.Sprintf("%d-%s=%t", i, gate, on), func(t *testing.T) {
					l.t = t
					g, err := features.Gates{}.With(gate, on)
					if err != nil {
						t.Fatal(err)
					}
					l.setGates(t, g)
					l.setCosts()
					l.setImage(fmt.Sprintf("app:%d", i+2))
					var terminating bool
					deleted := l.deleted
					for range 10 {
						l.step()
						_, rss, _ := l.snapshot()
						for _, rs := range rss {
							if rs.Status.TerminatingReplicas != nil && *rs.Status.TerminatingReplicas > 0 {
								terminating = true
							}
						}
					}
					d, rss, _ := l.snapshot()
					wantSet := gate != features.DeploymentReplicaSetTerminatingReplicas || on
					if (d.Status.TerminatingReplicas != nil) != wantSet {
						t.Errorf("Deployment terminatingReplicas = %v; want set: %t", d.Status.TerminatingReplicas, wantSet)
					}
					for _, rs := range rss {
						if (rs.Status.TerminatingReplicas != nil) != wantSet {
							t.Errorf("rs %s: terminatingReplicas = %v; want set: %t", rs.Name, rs.Status.TerminatingReplicas, wantSet)
						}
					}
					if wantSet && !terminating {
						t.Errorf("no ReplicaSet ever reported a terminating pod: the phase did not exercise the count")
					}
					if n := l.deleted - deleted; n < 6 {
						t.Errorf("%d pods deleted in the phase; want the 6 old ones, ranked by both sides", n)
					}
				})
			}
			t.Logf("%d lockstep steps; known deviations: %v", l.steps, l.known)
		})
	}
}
