package replicaset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/internal/testhooks"
	"github.com/ctrlkit/ctrlkit/internal/worker"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// ReconcilerConfig configures a [Reconciler]. ReplicaSets, Pods and Client
// are required; every other field has a useful zero value.
type ReconcilerConfig struct {
	// ReplicaSets reads ReplicaSets, normally from an informer cache: by
	// key to sync one, and by namespace to find the ReplicaSets that share
	// its controller (for the co-location rank). If it also implements
	// [reconcile.ByController], the latter comes from that index.
	ReplicaSets reconcile.Reader[*appsv1.ReplicaSet]
	// Pods lists pods, normally from an informer cache. If it also
	// implements [reconcile.ByController], a sync reads the ReplicaSet's
	// pods and the namespace's orphans through it instead of listing the
	// namespace. Through a [PodCache], whose pods are never modified (a
	// new version of a pod is a new object), the Reconciler also
	// remembers what each sync of a ReplicaSet with many pods learnt of
	// each pod object (weakly: it keeps no pod alive), and the next sync
	// reads only the pods that are new objects since: a settled
	// ReplicaSet's sync reads none.
	Pods reconcile.Lister[*corev1.Pod]
	// Client makes every write, and the live reads of status retries and
	// adoption checks.
	Client Client
	// Events receives pod events; nil discards them.
	Events EventRecorder
	// Clock tells the time; nil means the wall clock.
	Clock clock.PassiveClock
	// BurstReplicas caps creations or deletions per sync; 0 means
	// [BurstReplicas].
	BurstReplicas int
	// Expectations is the expectation record; nil means a new, private
	// one. Share it with whatever observes pod events (the [Controller]
	// does this itself).
	Expectations *Expectations
	// EagerStatus writes the status in the same sync that creates or
	// deletes pods, as upstream does. By default a sync whose creations
	// and deletions all succeed leaves the status to the sync their pod
	// events trigger, which counts those pods: one status write per
	// round instead of two. See [Reconciler.Reconcile].
	EagerStatus bool
	// FeatureGates are kube-controller-manager's feature gates this
	// controller consults; the zero value is v1.37's defaults. See the
	// package doc for what each one changes. [Reconciler.SetFeatureGates]
	// switches them on a running Reconciler.
	FeatureGates features.Gates
	// TrustExpiredExpectations takes an expectation that expired for
	// satisfied without looking, as upstream does (kubernetes#129795): a
	// pod cache that lags the API server by more than
	// [ExpectationsTimeout] then makes the controller create the pods it
	// has created already, or delete more than it meant to. By default
	// the Reconciler reads the pods it waits for from the API server
	// first, and renews the expectation while the cache is behind its own
	// writes (a deliberate difference; see the package doc).
	TrustExpiredExpectations bool
	// ReplaceRejectedPodsAtOnce replaces pods the kubelet rejected
	// (OutOfcpu, NodeAffinity, UnexpectedAdmissionError, ...) as soon as
	// they fail, however often that happens, as upstream does
	// (kubernetes#72593: a hot loop when every replacement is rejected
	// too). By default the first is replaced at once and the next ones
	// after a backoff, one at a time (see [RejectionBackoff]).
	ReplaceRejectedPodsAtOnce bool
}

func (c *ReconcilerConfig) validate() error {
	switch {
	case c.ReplicaSets == nil:
		return errors.New("replicaset: ReconcilerConfig.ReplicaSets is nil")
	case c.Pods == nil:
		return errors.New("replicaset: ReconcilerConfig.Pods is nil")
	case c.Client == nil:
		return errors.New("replicaset: ReconcilerConfig.Client is nil")
	case c.BurstReplicas < 0:
		return fmt.Errorf("replicaset: ReconcilerConfig.BurstReplicas is negative (%d)", c.BurstReplicas)
	}
	if err := c.FeatureGates.Validate(); err != nil {
		return fmt.Errorf("replicaset: ReconcilerConfig.FeatureGates: %w", err)
	}
	return nil
}

// Reconciler syncs one ReplicaSet per call: it reads the ReplicaSet and its
// pods, claims pods, decides with [ManageReplicas], applies the plan with
// [WritePods], records expectations and writes the status (upstream
// ReplicaSetController.syncReplicaSet). It is safe for concurrent use on
// different keys; one key must not be reconciled concurrently (a workqueue
// guarantees this).
type Reconciler struct {
	rss      reconcile.Reader[*appsv1.ReplicaSet]
	rssIndex reconcile.ByController[*appsv1.ReplicaSet] // nil unless rss implements it
	pods     reconcile.Lister[*corev1.Pod]
	index    reconcile.ByController[*corev1.Pod] // nil unless pods implements it
	client   Client
	events   EventRecorder
	clock    clock.PassiveClock
	burst    int
	exp      *Expectations
	eager    bool
	gates    worker.Gates
	// trustExpired is ReconcilerConfig.TrustExpiredExpectations.
	trustExpired bool
	// replaceAtOnce is ReconcilerConfig.ReplaceRejectedPodsAtOnce.
	replaceAtOnce bool

	selectors selectorCache
	bufs      podBuffers // pod lists read through a podAppender
	memos     podMemos   // what the last sync of each ReplicaSet learnt of its pods
	unsettled unsettledDeletions
	written   writtenPods // what the last round of creations made
}

// NewReconciler returns a Reconciler for cfg, or an error naming the first
// missing required field. It starts nothing.
func NewReconciler(cfg ReconcilerConfig) (*Reconciler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Reconciler{
		rss: cfg.ReplicaSets, pods: cfg.Pods, client: cfg.Client,
		events: cfg.Events, clock: cfg.Clock, burst: cfg.BurstReplicas, exp: cfg.Expectations,
		eager: cfg.EagerStatus, trustExpired: cfg.TrustExpiredExpectations,
		replaceAtOnce: cfg.ReplaceRejectedPodsAtOnce,
	}
	r.index, _ = cfg.Pods.(reconcile.ByController[*corev1.Pod])
	r.rssIndex, _ = cfg.ReplicaSets.(reconcile.ByController[*appsv1.ReplicaSet])
	if r.events == nil {
		r.events = discardEvents{}
	}
	if r.clock == nil {
		r.clock = clock.Real{}
	}
	if r.burst == 0 {
		r.burst = BurstReplicas
	}
	if r.exp == nil {
		r.exp = &Expectations{}
	}
	if err := r.gates.Store("replicaset", cfg.FeatureGates); err != nil {
		return nil, err
	}
	return r, nil
}

// FeatureGates returns the feature gates the Reconciler decides with.
func (r *Reconciler) FeatureGates() features.Gates { return r.gates.Load() }

// SetFeatureGates switches the feature gates of the Reconciler (and of
// the [Controller] that runs it): syncs that start afterwards decide with
// g, as upstream's controllers do with a gate switched in their process
// (a real kube-controller-manager takes its gates at start). An invalid
// setting is an error, and changes nothing.
func (r *Reconciler) SetFeatureGates(g features.Gates) error {
	return r.gates.Store("replicaset", g)
}

// Expectations returns the expectation record the Reconciler consults and
// updates. Pod event handlers report observations to it.
func (r *Reconciler) Expectations() *Expectations { return r.exp }

// Reconcile syncs the ReplicaSet key:
//
//  1. A ReplicaSet that no longer exists has its expectations dropped.
//  2. Whether expectations are satisfied is read before the pods are.
//  3. Active owned pods and matching orphans are claimed: orphans adopted,
//     non-matching pods released. Any claim error ends the sync.
//  4. If expectations are satisfied and the ReplicaSet is not being
//     deleted, missing pods are created or surplus pods deleted.
//  5. The status is written if it changed (one retry on a fresh copy).
//  6. The create/delete error, if any, is returned; otherwise the result
//     asks for a requeue when a pod will become available.
//
// The logger comes from ctx (logr.FromContextOrDiscard): each sync logs
// "Started syncing" and "Finished syncing" (with its duration) at V(4),
// with upstream's keys: "kind", and "key" as a "namespace/name" string
// (upstream logs only the second line; the first is ours, with the same
// keys). Other lines name the ReplicaSet "replicaSet", as upstream's do.
// An invalid selector is a
// [reconcile.Terminal] error: upstream does not retry it either.
//
// Two deliberate differences from upstream, both decided by
// [ManageReplicas] and described once in docs/fidelity.md ("Deliberate
// differences from upstream"): unless ReconcilerConfig.EagerStatus is set,
// a sync whose creates and deletes all succeed leaves the status to the
// sync their pod events trigger; and a sync that starts while earlier
// creates or deletes are unobserved writes the counts it sees (pods being
// deleted as terminating) but keeps status.observedGeneration. Either way
// the result asks for a sync once the expectations expire, in case the
// events never come.
//
// Every error is returned wrapped with the key.
func (r *Reconciler) Reconcile(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	start := r.clock.Now()
	// Guarded: the arguments of a disabled line would still be boxed, and
	// the key formatted, on every sync.
	if v := log.V(4); v.Enabled() {
		v.Info("Started syncing", "kind", controllerKindName, "key", key.String(), "startTime", start)
	}
	defer func() {
		if v := log.V(4); v.Enabled() {
			v.Info("Finished syncing", "kind", controllerKindName, "key", key.String(), "duration", r.clock.Now().Sub(start))
		}
	}()
	buf := r.bufs.get()
	defer r.bufs.put(buf) // nothing of this sync keeps the lists it reads
	in, counts, now, err := r.read(ctx, key, buf)
	if err != nil || in.ReplicaSet == nil {
		return reconcile.Result{}, err
	}
	plan := manageReplicas(in, &counts, now)
	var manageErr error
	if len(plan.Actions) > 0 {
		manageErr = r.act(ctx, key, in, plan, now)
		now = r.clock.Now()
		var decided bool
		if plan, decided = afterWrites(in, plan, manageErr, now); !decided {
			return reconcile.Result{RequeueAfter: plan.RequeueAfter}, nil // the pods' events write the status
		}
	}
	if plan.Status != nil {
		if err := r.writeStatus(ctx, in.ReplicaSet, *plan.Status); err != nil {
			return reconcile.Result{}, fmt.Errorf("replicaset %s: %w", key, errors.Join(err, manageErr))
		}
	}
	if manageErr != nil {
		return reconcile.Result{}, fmt.Errorf("replicaset %s: %w", key, manageErr)
	}
	return reconcile.Result{RequeueAfter: requeueAfter(in, plan, now, r.clock.Now())}, nil
}

// read reads what one sync of key decides from: the ReplicaSet, its
// claimed pods (adopting and releasing on the way) and a snapshot of its
// expectations, with the time they were read at and the status counts of
// the active pods at that time. A ReplicaSet that is gone has its
// expectations dropped and leaves in.ReplicaSet nil.
func (r *Reconciler) read(ctx context.Context, key types.NamespacedName, buf *[]*corev1.Pod) (in Input, counts podCounts, now time.Time, err error) {
	rs, err := r.rss.Get(ctx, key)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.exp.Delete(key)
			r.selectors.forget(key)
			r.memos.forget(key)
			r.unsettled.forget(key)
			r.written.forget(key)
			return Input{}, counts, now, nil
		}
		return Input{}, counts, now, fmt.Errorf("replicaset %s: %w", key, err)
	}
	if err := r.settle(ctx, key); err != nil {
		return Input{}, counts, now, fmt.Errorf("replicaset %s: %w", key, err)
	}
	now = r.clock.Now()
	satisfied := r.exp.Satisfied(key, now)
	x, hasExp := r.exp.Get(key)
	expired := satisfied && r.expiredUnobserved(x, hasExp, now)
	if hasExp && x.Fulfilled() {
		r.written.forget(key)
	}
	selector, err := r.selectors.get(key, rs.Spec.Selector)
	if err != nil {
		return Input{}, counts, now, reconcile.Terminal(fmt.Errorf("replicaset %s: invalid selector: %w", key, err))
	}
	if err := specProblem(rs, selector); err != nil {
		// The API server never stores such a ReplicaSet; one from another
		// source would have this controller create pods it cannot own.
		return Input{}, counts, now, reconcile.Terminal(fmt.Errorf("replicaset: %w", err))
	}
	active, terminating, failed, counts, err := r.claim(ctx, key, rs, selector, now, buf)
	if err != nil {
		return Input{}, counts, now, fmt.Errorf("replicaset %s: %w", key, err)
	}
	if expired {
		if satisfied, err = r.expiredAndCaughtUp(ctx, key, rs, now, active, terminating); err != nil {
			return Input{}, counts, now, fmt.Errorf("replicaset %s: %w", key, err)
		}
	}
	gates := r.FeatureGates()
	if !gates.Enabled(features.DeploymentReplicaSetTerminatingReplicas) {
		terminating = nil // upstream does not collect them then
	}
	in = Input{
		ReplicaSet: rs, Active: active, Terminating: terminating, Failed: failed,
		ExpectationsSatisfied: satisfied, BurstReplicas: r.burst, FeatureGates: gates,
		ReplaceRejectedAtOnce: r.replaceAtOnce, DeferStatus: !r.eager,
	}
	if !satisfied {
		in.Deleting = r.exp.PendingDeletions(key)
		if x, ok := r.exp.Get(key); ok {
			in.Expectation = &x
		}
	}
	if satisfied && rs.DeletionTimestamp == nil && len(active) > replicas(rs) {
		if in.Related, err = r.relatedPods(ctx, rs); err != nil {
			return Input{}, counts, now, fmt.Errorf("replicaset %s: related pods: %w", key, err)
		}
	}
	return in, counts, now, nil
}

// expiredAndCaughtUp is whether an expired expectation of key may be
// trusted: the pod cache has caught up with this controller's writes.
// Deviation (kubernetes#129795): see expiry.go. While it is behind, the
// expectation is renewed.
func (r *Reconciler) expiredAndCaughtUp(ctx context.Context, key types.NamespacedName, rs *appsv1.ReplicaSet, now time.Time, active, terminating []*corev1.Pod) (bool, error) {
	behind, why, err := r.cacheBehind(ctx, key, rs.UID, active, terminating)
	if err != nil {
		return false, err
	}
	if !behind {
		r.written.forget(key)
		return true, nil
	}
	r.exp.renew(key, now)
	logr.FromContextOrDiscard(ctx).Info("Expectations expired, but the pod cache is behind this controller's writes: waiting again", "replicaSet", key, "reason", why)
	r.events.Event(rs, corev1.EventTypeWarning, ReasonExpectationsRenewed,
		fmt.Sprintf("Waiting another %v for the pod cache: %s", ExpectationsTimeout, why))
	return false, nil
}

// act records the expectation of plan and makes its writes, then files
// what happened: creations that were not made are no longer expected,
// failed deletions neither; deletions that may have happened stay
// expected, for the next sync to settle with a live read (settle). It
// returns the first write error.
func (r *Reconciler) act(ctx context.Context, key types.NamespacedName, in Input, plan Plan, now time.Time) error {
	if v := logr.FromContextOrDiscard(ctx).V(2); v.Enabled() {
		v.Info("Managing replicas", "replicaSet", key, "plan", plan.Actions)
	}
	r.exp.Record(key, plan.Pending, now)
	// On a simulation's virtual clock the calls of a batch are forked on
	// it (see writePods); elsewhere they are plain goroutines.
	var clk clock.Clock
	if fc, ok := r.clock.(*clock.Fake); ok {
		clk = fc
	}
	applied, err := writePods(ctx, r.client, r.events, in.ReplicaSet, plan, clk)
	if plan.Pending != nil && plan.Pending.Deletions == nil {
		r.written.set(key, applied.CreatedPods)
	}
	r.exp.Lower(key, applied.CreatesSkipped, 0)
	observed := applied.DeletesFailed
	if testhooks.LowerFailedDeletes.Load() {
		observed = append(slices.Clip(observed), applied.DeletesUnsettled...)
	} else {
		r.unsettled.add(key, in.Active, applied.DeletesUnsettled)
	}
	for _, uid := range observed {
		r.exp.DeletionObserved(key, uid)
	}
	return err
}

// sooner returns the shorter of two positive delays; 0 means none.
func sooner(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// claim returns rs's active claimed pods, in listing order, and its
// terminating claimed pods, adopting and releasing pods on the way. It
// makes the status counts of the active pods at now in the same pass.
// When a PodCache lists many pods, what it reads of each pod object is
// remembered for the next sync of key (see podMemo).
func (r *Reconciler) claim(ctx context.Context, key types.NamespacedName, rs *appsv1.ReplicaSet, selector *labelMatcher, now time.Time, buf *[]*corev1.Pod) (active, terminating, failed []*corev1.Pod, counts podCounts, err error) {
	lists, err := r.listPods(ctx, rs, buf)
	if err != nil {
		return nil, nil, nil, podCounts{}, err
	}
	kept := newPodCollector(lists[0], len(lists[0])+len(lists[1]))
	var errs []error
	adopt := adopter{r: r, rs: rs}
	test := newPodLabelTest(selector, rs.Spec.Template.Labels)
	minReady := rs.Spec.MinReadySeconds
	var memo *podMemo // nil: learn every pod
	if _, ok := r.index.(podAppender); ok {
		// An informer cache: its pods are never modified (see podMemo).
		if n := len(lists[0]) + len(lists[1]); n >= memoMinPods {
			memo = r.memos.take(key, rs, &test, n)
		} else {
			r.memos.forget(key)
		}
	}
	i := 0
	defer func() { r.memos.give(memo, i) }()
	var scratch podFact
	for _, list := range lists {
		for _, p := range list {
			f := memo.known(i, p)
			if f == nil {
				f = memo.learn(i, p, rs, &test, &scratch)
			}
			i++
			if !f.has(factCandidate) {
				continue
			}
			match := f.has(factMatch)
			if !f.has(factActive) {
				switch {
				case f.has(factControlled) && f.has(factTerminating) && match:
					terminating = append(terminating, p) // IsClaimed
				case f.has(factControlled) && match && p.Status.Phase == corev1.PodFailed:
					failed = append(failed, p) // for the rejected pods' backoff
				}
				continue
			}
			v := Own // a controlled candidate is controlled by rs
			if !f.has(factControlled) || !match {
				v = claimVerdict(rs, p, controllerOf(p), match)
			}
			switch v {
			case Own:
				kept.keep(p)
				counts.addFact(f, minReady == 0 || readyFor(f.readySince, minReady, now))
			case Adopt:
				switch err := adopt.adopt(ctx, p); {
				case err == nil:
					kept.keep(p)
					counts.addFact(f, minReady == 0 || readyFor(f.readySince, minReady, now))
				case !apierrors.IsNotFound(err):
					errs = append(errs, err)
				}
			case Release:
				if err := r.release(ctx, rs, p); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, nil, podCounts{}, errors.Join(errs...)
	}
	return kept.pods, terminating, failed, counts, nil
}

// listPods returns the candidate pods of rs in up to two lists: through the
// controller index (owned, then orphans) when available, otherwise the
// whole namespace. A [PodCache] fills buf instead of new lists.
func (r *Reconciler) listPods(ctx context.Context, rs *appsv1.ReplicaSet, buf *[]*corev1.Pod) ([2][]*corev1.Pod, error) {
	var out [2][]*corev1.Pod
	var err error
	if a, ok := r.index.(podAppender); ok {
		b := *buf
		if b, err = a.appendByController(b[:0], rs.Namespace, rs.UID); err != nil {
			return out, err
		}
		n := len(b)
		b, err = a.appendByController(b, rs.Namespace, "")
		*buf = b
		out[0], out[1] = b[:n:n], b[n:]
		return out, err
	}
	if r.index == nil {
		out[0], err = r.pods.List(ctx, rs.Namespace, labels.Everything())
		return out, err
	}
	if out[0], err = r.index.ListByController(ctx, rs.Namespace, rs.UID); err != nil {
		return out, err
	}
	out[1], err = r.index.ListByController(ctx, rs.Namespace, "")
	return out, err
}

// adopter adopts pods for one sync, checking once, with a live read, that
// the ReplicaSet is still there and not being deleted (upstream
// RecheckDeletionTimestamp; issue 42639).
type adopter struct {
	r       *Reconciler
	rs      *appsv1.ReplicaSet
	checked bool
	err     error
}

func (a *adopter) adopt(ctx context.Context, pod *corev1.Pod) error {
	if !a.checked {
		a.checked = true
		a.err = a.recheck(ctx)
	}
	if a.err != nil {
		// %v, not %w: a vanished ReplicaSet must not read as a vanished pod.
		return fmt.Errorf("can't adopt Pod %s/%s (%s): %v", pod.Namespace, pod.Name, pod.UID, a.err)
	}
	patch, err := AdoptPatch(a.rs, pod)
	if err != nil {
		return err
	}
	return a.r.client.PatchPod(ctx, pod.Namespace, pod.Name, patch)
}

func (a *adopter) recheck(ctx context.Context) error {
	key := types.NamespacedName{Namespace: a.rs.Namespace, Name: a.rs.Name}
	fresh, err := a.r.client.GetReplicaSet(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
	case fresh.UID != a.rs.UID:
		return fmt.Errorf("can't recheck DeletionTimestamp: original ReplicaSet %s is gone: got uid %s, wanted %s", key, fresh.UID, a.rs.UID)
	case fresh.DeletionTimestamp != nil:
		return fmt.Errorf("%s has just been deleted at %v", key, fresh.DeletionTimestamp)
	}
	return nil
}

// release removes rs's controller reference from pod. NotFound (the pod is
// gone) and Invalid (no such reference, or the pod was recreated) are not
// errors.
func (r *Reconciler) release(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	patch, err := ReleasePatch(rs, pod)
	if err != nil {
		return err
	}
	err = r.client.PatchPod(ctx, pod.Namespace, pod.Name, patch)
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return err
}

// relatedPods returns the pods selected by every ReplicaSet that shares
// rs's controller, deduplicated by UID; nil when rs has no controller.
func (r *Reconciler) relatedPods(ctx context.Context, rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil {
		return nil, nil
	}
	var rss []*appsv1.ReplicaSet
	var err error
	if r.rssIndex != nil {
		rss, err = r.rssIndex.ListByController(ctx, rs.Namespace, ref.UID)
	} else {
		rss, err = r.rss.List(ctx, rs.Namespace, labels.Everything())
	}
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	seen := make(map[types.UID]bool)
	for _, other := range rss {
		if oref := metav1.GetControllerOfNoCopy(other); oref == nil || oref.UID != ref.UID || other.Namespace != rs.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(other.Spec.Selector)
		if err != nil {
			continue // an invalid selector selects nothing
		}
		pods, err := r.pods.List(ctx, other.Namespace, sel)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if !seen[p.UID] {
				seen[p.UID] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// writeStatus writes status to rs, and on failure once more to a fresh copy
// read from the API (upstream updateReplicaSetStatus with
// statusUpdateRetries = 1). A failed read is returned in preference to the
// write error.
func (r *Reconciler) writeStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) error {
	cp := rs.DeepCopy()
	cp.Status = status
	_, err := r.client.UpdateReplicaSetStatus(ctx, cp)
	if err == nil {
		return nil
	}
	fresh, getErr := r.client.GetReplicaSet(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name})
	if getErr != nil {
		return fmt.Errorf("status update: re-read after %v: %w", err, getErr)
	}
	fresh.Status = status
	if _, err := r.client.UpdateReplicaSetStatus(ctx, fresh); err != nil {
		return fmt.Errorf("status update: %w", err)
	}
	return nil
}

// settle reads again, live, the pods whose deletion failed without telling
// whether it happened (the API server was unreachable, say), so that a
// deletion that did not happen stops being expected at once instead of
// holding the ReplicaSet until the expectation expires (upstream lowers
// the expectation at the failure, and may then delete another pod while
// the first deletion's event is still coming). A pod that is gone,
// replaced or being deleted was deleted: its event comes. An error leaves
// it unsettled, and the sync fails to be retried with backoff.
func (r *Reconciler) settle(ctx context.Context, key types.NamespacedName) error {
	live, ok := r.client.(PodGetter)
	if !ok {
		return nil
	}
	for uid, name := range r.unsettled.get(key) {
		cur, err := live.GetPod(ctx, key.Namespace, name)
		switch {
		case apierrors.IsNotFound(err), err == nil && (cur == nil || cur.UID != uid || cur.DeletionTimestamp != nil):
		case err == nil:
			r.exp.DeletionObserved(key, uid) // it did not happen
		default:
			return fmt.Errorf("settling the deletion of pod %s: %w", name, err)
		}
		r.unsettled.remove(key, uid)
	}
	return nil
}

// unsettledDeletions are, per ReplicaSet, the pods (UID → name) whose
// deletion may or may not have happened. Safe for concurrent use.
type unsettledDeletions struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[types.UID]string
}

func (u *unsettledDeletions) add(key types.NamespacedName, pods []*corev1.Pod, uids []types.UID) {
	if len(uids) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[types.NamespacedName]map[types.UID]string{}
	}
	if u.m[key] == nil {
		u.m[key] = map[types.UID]string{}
	}
	for _, uid := range uids {
		for _, p := range pods {
			if p.UID == uid {
				u.m[key][uid] = p.Name
			}
		}
	}
}

func (u *unsettledDeletions) get(key types.NamespacedName) map[types.UID]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return maps.Clone(u.m[key])
}

func (u *unsettledDeletions) remove(key types.NamespacedName, uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m[key], uid)
	if len(u.m[key]) == 0 {
		delete(u.m, key)
	}
}

func (u *unsettledDeletions) forget(key types.NamespacedName) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, key)
}
