package planner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// maxRounds bounds the controller rounds of one plan, against a
// controller that never settles.
const maxRounds = 100000

// epoch is the virtual time every simulation starts at.
func epoch() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// Simulate simulates the rollout of d in virtual time and returns its
// timeline. current are the ReplicaSets that exist before the rollout
// (see [Previous]); their pods are started, healthy, before the rollout
// begins. With no current ReplicaSets the Deployment is new. d is created
// at the start with its template, so the controller adopts current and
// rolls from it to d's template. Neither d nor current is modified.
//
// The real controllers run: package deployment's Reconciler (Sync +
// WritePlan) and package replicaset's Reconciler, against an in-memory API
// server (package memcluster) with a simulated kubelet whose pods follow
// model. The loop is single-threaded and deterministic — no informers, no
// queues, no goroutines of its own:
//
//  1. apply the Changes that are due;
//  2. a round: the kubelet brings every pod up to date, the Deployment is
//     reconciled, then every ReplicaSet, in name order; the rounds repeat
//     until one writes nothing (the instant is settled), and every round
//     that changed the observed state is a [Step];
//  3. move the clock to the earliest of: the kubelet's next transition,
//     a reconciler's RequeueAfter (progress deadline, minReadySeconds),
//     the next Change.
//
// Reads go straight to the API server, so every sync sees every earlier
// write: ReplicaSet expectations are always satisfied (they are cleared
// before each sync) and there is no informer lag. Real clusters add
// latency between steps; the order and sizes of the steps are the same.
//
// The run ends when the rollout is complete, the last Change is applied
// and no pod is terminating; when nothing more can happen; or at the
// horizon. An unfinished rollout gets a [Stall] with Explain's reasons.
func Simulate(d *appsv1.Deployment, current []*appsv1.ReplicaSet, model PodModel, opts Options) (Timeline, error) {
	if d == nil {
		return Timeline{}, errors.New("planner: nil Deployment")
	}
	if err := model.validate(); err != nil {
		return Timeline{}, err
	}
	if opts.Horizon <= 0 {
		opts.Horizon = time.Hour
	}
	if err := checkSize(d, opts); err != nil {
		return Timeline{}, err
	}
	s, err := newSim(d, model, opts)
	if err != nil {
		return Timeline{}, err
	}
	ctx := context.Background()
	if err := s.start(ctx, current); err != nil {
		return Timeline{}, err
	}
	return s.run(ctx, d)
}

// sim is the state of one Plan run.
type sim struct {
	clk     *clock.Fake
	c       *memcluster.Cluster
	kubelet *memcluster.Kubelet
	api     *api
	dr      *deployment.Reconciler
	rr      *replicaset.Reconciler
	exp     *replicaset.Expectations
	key     types.NamespacedName
	opts    Options
	// setup is true while the current ReplicaSets come up: their pods are
	// healthy whatever the model says. Only read from Kubelet.Sync, which
	// runs on the planner's goroutine.
	setup bool
	due   map[string]time.Time // requeues asked for by the reconcilers
	tl    Timeline
	// prevRSs and prevReplicas are the previous round's, to detect scaling
	// events; scaling and events accumulate until the next Step.
	prevRSs      []*appsv1.ReplicaSet
	prevReplicas int32
	scaling      bool
	events       []string
	rounds       int
	// kubelet is the time and pod-write count of the last Kubelet.Sync and
	// the next transition it returned: the kubelet only needs to look
	// again when either moved (syncing every pod is the costliest part).
	kubeletAt     time.Time
	kubeletWrites int64
	kubeletNext   time.Time
	// outsidePods are Options.Outside on the simulation's clock, and
	// outside the instants one stops counting against the quotas (sorted);
	// both set at the start.
	outsidePods []*corev1.Pod
	outside     []time.Time
	// refusing holds the ReplicaSets whose last pod creation a quota
	// refused; held is what the pods held are charged (with Quotas).
	refusing map[string]bool
	held     *heldUsage
	// outsideSums are the Outside pods' charges per quota, valid from
	// outsideFrom until outsideUntil (the next instant one changes).
	outsideSums               []corev1.ResourceList
	outsideFrom, outsideUntil time.Time
}

func newSim(d *appsv1.Deployment, model PodModel, opts Options) (*sim, error) {
	ns := cmp.Or(d.Namespace, metav1.NamespaceDefault)
	s := &sim{
		clk:      clock.NewFake(epoch()),
		key:      types.NamespacedName{Namespace: ns, Name: d.Name},
		opts:     opts,
		due:      map[string]time.Time{},
		refusing: map[string]bool{},
		exp:      &replicaset.Expectations{},
	}
	cfg := memcluster.Config{Clock: s.clk, Seed: opts.Seed}
	if len(opts.Quotas) > 0 {
		s.held = newHeldUsage(opts.Quotas)
		cfg.OnWrite = func(w memcluster.Write) { s.held.write(w, s.clk.Now()) }
	}
	s.c = memcluster.New(cfg)
	old := memcluster.PodBehavior{ShutdownDelay: model.Shutdown}
	inFlight := map[string][]time.Duration{}
	for rs, ds := range opts.InFlight {
		inFlight[rs] = slices.Clone(ds)
	}
	s.kubelet = memcluster.NewKubelet(s.c, memcluster.KubeletConfig{
		Nodes: opts.Nodes,
		Model: func(p *corev1.Pod, rnd *rand.Rand) memcluster.PodBehavior {
			if s.setup {
				// A pod in flight is created with the others and made
				// Ready that much later: as every current pod waits the
				// same minReadySeconds, it is available that much after
				// the start.
				if ref := metav1.GetControllerOfNoCopy(p); ref != nil && len(inFlight[ref.Name]) > 0 {
					b := old
					b.ReadyDelay = max(inFlight[ref.Name][0], 0)
					inFlight[ref.Name] = inFlight[ref.Name][1:]
					return b
				}
				return old
			}
			b := model.behavior(rnd)
			s.tl.Faults.count(b.Failure)
			return b
		},
	})
	s.api = &api{c: s.c, ns: ns}
	s.api.admit = s.admitPod
	// EagerStatus (here and for the ReplicaSet reconciler): the timeline
	// shows the statuses kube-controller-manager would write, round by
	// round, not ctrlkit's fewer, later writes.
	dr, err := deployment.NewReconciler(deployment.ReconcilerConfig{Deployments: deploymentGetter{s.api},
		ReplicaSets: rsReader{s.api}, Pods: podLister{s.api}, Client: s.api, Events: s.api, Clock: s.clk, EagerStatus: true,
		FeatureGates: opts.FeatureGates})
	if err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	s.dr = dr
	return s, nil
}

// start creates the current ReplicaSets, lets their pods become
// available, then creates the Deployment: that instant is the start.
func (s *sim) start(ctx context.Context, current []*appsv1.ReplicaSet) error {
	rr, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{ReplicaSets: rsReader{s.api}, Pods: podLister{s.api},
		Client: s.api, Events: rsEvents{s.api}, Clock: s.clk, Expectations: s.exp, EagerStatus: true,
		FeatureGates: s.opts.FeatureGates})
	if err != nil {
		return fmt.Errorf("planner: %w", err)
	}
	s.rr = rr
	s.setup = true
	// Pods in flight come up after the start, which is when the others
	// are available: minReadySeconds after they all turn Ready at once.
	var pending int32
	settled := s.clk.Now()
	restore := map[string]int32{} // the spec.replicas of the ReplicaSets set up with fewer pods
	for _, rs := range current {
		if rs == nil {
			continue
		}
		size := max(replicas(rs.Spec.Replicas), 0)
		if n, ok := s.opts.Existing[rs.Name]; ok && n < size {
			restore[rs.Name], size = size, max(n, 0)
		}
		if n := min(int32(len(s.opts.InFlight[rs.Name])), size); n > 0 {
			pending += n
			settled = later(settled, s.clk.Now().Add(time.Duration(rs.Spec.MinReadySeconds)*time.Second))
		}
		c := &appsv1.ReplicaSet{Spec: *rs.Spec.DeepCopy()}
		c.Spec.Replicas = ptr(size)
		c.Name, c.GenerateName, c.Namespace = rs.Name, rs.GenerateName, s.key.Namespace
		c.Labels, c.Annotations = maps.Clone(rs.Labels), maps.Clone(rs.Annotations)
		if _, err := s.api.CreateReplicaSet(ctx, c); err != nil {
			return fmt.Errorf("planner: current replica set %s: %w", rs.Name, err)
		}
	}
	for {
		next, err := s.settle(ctx, false)
		if err != nil {
			return err
		}
		rss, err := s.api.List(s.key.Namespace, everything())
		if err != nil {
			return err
		}
		if rollout.TotalAvailableReplicas(rss) >= rollout.TotalReplicas(rss)-pending && !s.clk.Now().Before(settled) {
			break
		}
		if s.clk.Now().Before(settled) && (next.IsZero() || settled.Before(next)) {
			next = settled
		}
		if next.IsZero() {
			return errors.New("planner: the current replica sets never became available")
		}
		s.clk.SetTime(next)
	}
	s.setup = false
	for _, name := range slices.Sorted(maps.Keys(restore)) {
		rs, err := s.api.GetReplicaSet(ctx, types.NamespacedName{Namespace: s.key.Namespace, Name: name})
		if err != nil {
			return fmt.Errorf("planner: current replica set %s: %w", name, err)
		}
		rs.Spec.Replicas = ptr(restore[name])
		if _, err := s.api.UpdateReplicaSet(ctx, rs); err != nil {
			return fmt.Errorf("planner: current replica set %s: %w", name, err)
		}
	}
	s.tl.Start = s.clk.Now()
	if len(s.opts.Quotas) > 0 {
		s.outsidePods = s.shiftOutside()
		s.outside = s.outsideChanges()
	}
	return nil
}

// settle runs rounds at the current instant until one writes nothing, and
// returns the earliest future time something is due (zero: nothing).
// With record set, rounds that change the observed state become steps.
func (s *sim) settle(ctx context.Context, record bool) (time.Time, error) {
	for {
		rv := s.c.ResourceVersion()
		next := s.syncKubelet()
		if err := s.round(ctx); err != nil {
			return time.Time{}, err
		}
		s.rounds++
		if s.rounds > maxRounds {
			return time.Time{}, fmt.Errorf("planner: no progress after %d controller rounds", maxRounds)
		}
		if record {
			if err := s.record(); err != nil {
				return time.Time{}, err
			}
		}
		if s.c.ResourceVersion() == rv {
			now := s.clk.Now()
			for _, t := range s.due {
				if t.After(now) && (next.IsZero() || t.Before(next)) {
					next = t
				}
			}
			for _, t := range s.outside {
				if t.After(now) {
					if next.IsZero() || t.Before(next) {
						next = t
					}
					break
				}
			}
			return next, nil
		}
	}
}

// round syncs the Deployment once and every ReplicaSet once.
func (s *sim) round(ctx context.Context) error {
	now := s.clk.Now()
	res, err := s.dr.Reconcile(ctx, s.key)
	if err != nil {
		return fmt.Errorf("planner: deployment sync at +%s: %w", now.Sub(s.tl.Start), err)
	}
	s.requeue("deployment", now, res.RequeueAfter)
	rss, err := s.api.List(s.key.Namespace, everything())
	if err != nil {
		return err
	}
	for _, rs := range rss { // List returns them in name order
		key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
		s.exp.Delete(key) // reads are live: nothing is left to observe
		res, err := s.rr.Reconcile(ctx, key)
		var refused *refusal
		if errors.As(err, &refused) {
			// Admission refused a pod: the sync is tried again at the next
			// change, and when a pod of it becomes available (the requeue
			// the failed sync did not return).
			if err := s.availabilityRequeue(ctx, rs, now); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("planner: replica set sync at +%s: %w", now.Sub(s.tl.Start), err)
		}
		s.requeue("rs/"+rs.Name, now, res.RequeueAfter)
	}
	return nil
}

// syncKubelet brings the pods up to date if time moved or pods were
// written since the last time, and returns the next pod transition.
func (s *sim) syncKubelet() time.Time {
	now, writes := s.clk.Now(), s.api.podWrites.Load()
	if s.kubeletAt.IsZero() || !now.Equal(s.kubeletAt) || writes != s.kubeletWrites {
		s.kubeletNext = s.kubelet.Sync()
		s.kubeletAt, s.kubeletWrites = now, writes
	}
	return s.kubeletNext
}

func (s *sim) requeue(key string, now time.Time, after time.Duration) {
	if after > 0 {
		s.due[key] = now.Add(after)
	} else if t, ok := s.due[key]; ok && !t.After(now) {
		delete(s.due, key)
	}
}

// record appends a Step if the observed state changed since the last one.
func (s *sim) record() error {
	d, err := s.api.Get(s.key)
	if err != nil {
		return fmt.Errorf("planner: %w", err)
	}
	rss, err := s.api.List(s.key.Namespace, everything())
	if err != nil {
		return err
	}
	D := replicas(d.Spec.Replicas)
	newRS := rollout.FindNewReplicaSet(d, s.prevRSs)
	scaling, err := rollout.IsScalingEvent(d, newRS, othersThan(newRS, s.prevRSs))
	if err != nil {
		scaling = false // invalid annotations only; upstream skips them too
	}
	s.scaling = s.scaling || scaling || D != s.prevReplicas
	s.prevRSs, s.prevReplicas = rss, D
	s.events = append(s.events, s.api.takeEvents()...)
	st := stepFrom(s.clk.Now(), d, rss)
	if n := len(s.tl.Steps); n > 0 && len(s.events) == 0 && sameState(s.tl.Steps[n-1], st) {
		return nil
	}
	st.ScalingEvent, st.Events = s.scaling, s.events
	s.scaling, s.events = false, nil
	s.tl.Steps = append(s.tl.Steps, st)
	return nil
}

// sameState compares two steps without their time, events and flags;
// conditions are compared by type, status and reason only.
func sameState(a, b Step) bool {
	cond := func(st appsv1.DeploymentStatus) []string {
		var out []string
		for _, c := range st.Conditions {
			out = append(out, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
		}
		slices.Sort(out)
		return out
	}
	return a.Replicas == b.Replicas && a.Generation == b.Generation && a.Paused == b.Paused &&
		a.Revision == b.Revision && reflect.DeepEqual(a.ReplicaSets, b.ReplicaSets) &&
		reflect.DeepEqual(cond(a.Status), cond(b.Status))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
