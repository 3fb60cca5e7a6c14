package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/internal/writes"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// Controller names, as kube-controller-manager names the controllers and
// their events' source components.
const (
	DeploymentControllerName = "deployment-controller"
	ReplicaSetControllerName = "replicaset-controller"
)

// Options configures the controllers an Add function registers. The zero
// value is kube-controller-manager's configuration.
type Options struct {
	// Workers is the number of concurrent syncs of each controller
	// (controller-runtime's MaxConcurrentReconciles); 0 means 5, as in
	// kube-controller-manager.
	Workers int
	// RateLimiter spaces the retries of failing keys; nil means
	// controller-runtime's default (per-item exponential backoff and an
	// overall token bucket, upstream's), one per controller. A limiter set
	// here is shared by the controllers registered with these Options ([Add]
	// registers two), its overall bucket included.
	RateLimiter workqueue.TypedRateLimiter[crreconcile.Request]
	// Namespace restricts the controllers to one namespace: events of
	// other namespaces are ignored. "" means every namespace the manager's
	// cache holds.
	Namespace string
	// Selector restricts the controllers to the objects they sync whose
	// labels match it: Deployments for the Deployment controller,
	// ReplicaSets for the ReplicaSet controller. Nil means all. Pods and
	// ReplicaSets are still read by ownership.
	Selector labels.Selector
	// BatchPeriod delays the syncs that pod events and ReplicaSet status
	// changes trigger, so that a burst of them costs one sync and one
	// status write (see deployment.ControllerConfig.BatchPeriod). Zero
	// syncs at once, like kube-controller-manager.
	BatchPeriod time.Duration
	// EagerStatus writes statuses with upstream's timing (see
	// deployment.ReconcilerConfig.EagerStatus).
	EagerStatus bool
	// BurstReplicas caps the pods the ReplicaSet controller creates or
	// deletes in one sync; 0 means replicaset.BurstReplicas.
	BurstReplicas int
	// FeatureGates are kube-controller-manager's feature gates both
	// controllers consult (features.Gates); the zero value is v1.37's
	// defaults. With StaleControllerConsistencyReplicaSet off the
	// ReplicaSet controller does not wait for its own writes to reach the
	// manager's cache.
	FeatureGates features.Gates
}

func (o Options) validate() error {
	switch {
	case o.Workers < 0:
		return fmt.Errorf("controllerruntime: Options.Workers is negative (%d)", o.Workers)
	case o.BatchPeriod < 0:
		return fmt.Errorf("controllerruntime: Options.BatchPeriod is negative (%v)", o.BatchPeriod)
	case o.BurstReplicas < 0:
		return fmt.Errorf("controllerruntime: Options.BurstReplicas is negative (%d)", o.BurstReplicas)
	case o.FeatureGates.Validate() != nil:
		return fmt.Errorf("controllerruntime: Options.FeatureGates: %w", o.FeatureGates.Validate())
	}
	return nil
}

func (o Options) controllerOptions(r crreconcile.Reconciler) controller.Options {
	workers := o.Workers
	if workers == 0 {
		workers = 5
	}
	return controller.Options{Reconciler: r, MaxConcurrentReconciles: workers, RateLimiter: o.RateLimiter}
}

// Add registers both controllers with mgr, sharing the marks by which they
// wait for their own writes (see the package documentation).
func Add(mgr manager.Manager, opts Options) error {
	if mgr == nil {
		return errors.New("controllerruntime: nil Manager")
	}
	marks := newWriteMarks(mgr.GetCache())
	if err := addDeployment(mgr, opts, marks); err != nil {
		return err
	}
	return addReplicaSet(mgr, opts, marks)
}

// AddDeploymentController registers ctrlkit's Deployment controller with
// mgr, under the name [DeploymentControllerName]. Call it before the
// manager starts.
func AddDeploymentController(mgr manager.Manager, opts Options) error {
	if mgr == nil {
		return errors.New("controllerruntime: nil Manager")
	}
	return addDeployment(mgr, opts, newWriteMarks(mgr.GetCache()))
}

// AddReplicaSetController registers ctrlkit's ReplicaSet controller with
// mgr, under the name [ReplicaSetControllerName]. Call it before the
// manager starts.
func AddReplicaSetController(mgr manager.Manager, opts Options) error {
	if mgr == nil {
		return errors.New("controllerruntime: nil Manager")
	}
	return addReplicaSet(mgr, opts, newWriteMarks(mgr.GetCache()))
}

func addDeployment(mgr manager.Manager, opts Options, marks *writeMarks) error {
	if err := opts.validate(); err != nil {
		return err
	}
	if err := IndexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	skipped, err := skippedSyncs(DeploymentControllerName)
	if err != nil {
		return err
	}
	c := mgr.GetCache()
	s, err := newDeploymentSync(deploymentSyncConfig{
		Cache: c, Client: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Events: mgr.GetEventRecorderFor(DeploymentControllerName), //nolint:staticcheck // core/v1 Events, as kube-controller-manager records them
		Marks:  marks, Skipped: skipped, Opts: opts,
	})
	if err != nil {
		return err
	}
	ctl, err := controller.New(DeploymentControllerName, mgr, opts.controllerOptions(adapt(s.sync)))
	if err != nil {
		return fmt.Errorf("controllerruntime: %w", err)
	}
	rules := deployment.EventRules{Deployments: s.deployments, ReplicaSets: replicaSetReader(c)}
	q := queue{namespace: opts.Namespace, batch: opts.BatchPeriod}
	for _, src := range []source.Source{
		source.Kind(c, &appsv1.Deployment{}, handlerFor(q, rules.DeploymentAdded, rules.DeploymentUpdated, rules.DeploymentDeleted)),
		source.Kind(c, &appsv1.ReplicaSet{}, handlerFor(q, rules.ReplicaSetAdded, rules.ReplicaSetUpdated, rules.ReplicaSetDeleted)),
		source.Kind(c, &corev1.Pod{}, handlerFor(q, nil, nil, rules.PodDeleted)),
	} {
		if err := ctl.Watch(src); err != nil {
			return fmt.Errorf("controllerruntime: %w", err)
		}
	}
	return nil
}

// deploymentSyncConfig is what the Deployment controller's sync is made
// of; addDeployment takes it from the manager.
type deploymentSyncConfig struct {
	Cache  client.Reader // the manager's cache, with the field indexes
	Client client.Client // writes
	Live   client.Reader // reads bypassing the cache
	Events deployment.EventRecorder
	Marks  *writeMarks
	// Skipped counts the syncs skipped while the cache lags behind the
	// controller's own writes.
	Skipped prometheus.Counter
	Opts    Options
}

// deploymentSync is the Deployment controller's sync of one key: skipped
// while a write of the last sync of that Deployment has not reached the
// cache (internal/writes.Tracker), or when the Deployment's labels do not match
// Options.Selector; otherwise deployment.Reconciler's.
type deploymentSync struct {
	r           *deployment.Reconciler
	deployments reader[appsv1.Deployment, *appsv1.Deployment, *appsv1.DeploymentList]
	writes      *writes.Tracker
	selector    labels.Selector
	skipped     prometheus.Counter
}

func newDeploymentSync(cfg deploymentSyncConfig) (*deploymentSync, error) {
	ds := deploymentReader(cfg.Cache)
	w := Writer{Client: cfg.Client, Live: cfg.Live}
	t := writes.New(cfg.Marks, live(w.live()))
	r, err := deployment.NewReconciler(deployment.ReconcilerConfig{
		Deployments: ds, ReplicaSets: replicaSetReader(cfg.Cache), Pods: podReader(cfg.Cache),
		Live:         reconcile.GetterFunc[*appsv1.Deployment](w.GetDeployment),
		Client:       writes.TrackDeployments(w, t),
		Events:       cfg.Events,
		EagerStatus:  cfg.Opts.EagerStatus,
		FeatureGates: cfg.Opts.FeatureGates,
	})
	if err != nil {
		return nil, fmt.Errorf("controllerruntime: %w", err)
	}
	return &deploymentSync{r: r, deployments: ds, writes: t, selector: cfg.Opts.Selector, skipped: cfg.Skipped}, nil
}

func (s *deploymentSync) sync(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	behind, err := s.writes.Behind(ctx, key)
	switch {
	case err != nil:
		return reconcile.Result{}, err
	case behind:
		if s.skipped != nil {
			s.skipped.Inc()
		}
		return reconcile.Result{}, nil // the write's event enqueues key again
	}
	if s.selector != nil {
		if d, err := s.deployments.Get(ctx, key); err == nil && !s.selector.Matches(labels.Set(d.Labels)) {
			return reconcile.Result{}, nil
		}
	}
	return s.r.Reconcile(writes.Syncing(ctx, key), key)
}

func addReplicaSet(mgr manager.Manager, opts Options, marks *writeMarks) error {
	if err := opts.validate(); err != nil {
		return err
	}
	if err := IndexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	skipped, err := skippedSyncs(ReplicaSetControllerName)
	if err != nil {
		return err
	}
	c := mgr.GetCache()
	rss, pods := replicaSetReader(c), podReader(c)
	w := Writer{Client: mgr.GetClient(), Live: mgr.GetAPIReader()}
	r, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
		ReplicaSets: rss, Pods: pods,
		Client:        writes.TrackReplicaSets(w, marks),
		Events:        mgr.GetEventRecorderFor(ReplicaSetControllerName), //nolint:staticcheck // core/v1 Events, as kube-controller-manager records them
		BurstReplicas: opts.BurstReplicas,
		EagerStatus:   opts.EagerStatus,
		FeatureGates:  opts.FeatureGates,
	})
	if err != nil {
		return fmt.Errorf("controllerruntime: %w", err)
	}
	do := func(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
		if opts.Selector != nil {
			if rs, err := rss.Get(ctx, key); err == nil && !opts.Selector.Matches(labels.Set(rs.Labels)) {
				return reconcile.Result{}, nil
			}
		}
		return r.Reconcile(ctx, key)
	}
	sync := adapt(do)
	rec := crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
		if r.FeatureGates().Enabled(features.StaleControllerConsistencyReplicaSet) && marks.Behind(ctx, writes.ReplicaSet, req.NamespacedName) {
			skipped.Inc()
			// The write's event enqueues key again. As upstream's
			// consistency check fails the sync, the skip counts toward
			// the key's backoff: a rate-limited requeue, not an error.
			return crreconcile.Result{Requeue: true}, nil //nolint:staticcheck // the rate-limited requeue
		}
		return sync.Reconcile(ctx, req)
	})
	ctl, err := controller.New(ReplicaSetControllerName, mgr, opts.controllerOptions(rec))
	if err != nil {
		return fmt.Errorf("controllerruntime: %w", err)
	}
	rules := replicaset.EventRules{ReplicaSets: rss}
	exp := r.Expectations()
	q := queue{namespace: opts.Namespace, batch: opts.BatchPeriod}
	for _, src := range []source.Source{
		source.Kind(c, &appsv1.ReplicaSet{}, handlerFor(q,
			observed(exp, rules.ReplicaSetAdded), observed2(exp, rules.ReplicaSetUpdated), observed(exp, rules.ReplicaSetDeleted))),
		source.Kind(c, &corev1.Pod{}, handlerFor(q,
			observed(exp, rules.PodAdded), observed2(exp, rules.PodUpdated), observed(exp, rules.PodDeleted))),
	} {
		if err := ctl.Watch(src); err != nil {
			return fmt.Errorf("controllerruntime: %w", err)
		}
	}
	return nil
}

// adapt turns a ctrlkit sync into a controller-runtime Reconciler:
// Terminal errors become TerminalErrors, RequeueAfter carries over.
func adapt(do func(context.Context, types.NamespacedName) (reconcile.Result, error)) crreconcile.Reconciler {
	return crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
		res, err := do(ctx, req.NamespacedName)
		if reconcile.IsTerminal(err) {
			return crreconcile.Result{}, crreconcile.TerminalError(err)
		}
		return crreconcile.Result{RequeueAfter: res.RequeueAfter}, err
	})
}
