// Package reconcile is the vocabulary the controllers of ctrlkit share:
// what a sync returns ([Result]), which errors must not be retried
// ([Terminal], [IsTerminal]), what a worker calls ([Reconciler], [Func]),
// where events go ([EventRecorder]), the cache reads a Reconciler makes
// ([Getter], [Lister], [ByController]), and what an informer event asks of
// a work queue ([Enqueue]).
//
// The packages deployment and replicaset use these types in their
// configuration and their signatures, so a reader who knows one knows the
// other, and a framework adapter (controller-runtime, client-go informers)
// is written once for both.
//
// # One shape for both controllers
//
// Packages deployment and replicaset are built the same way:
// NewReconciler(ReconcilerConfig) (*Reconciler, error) and
// NewController(ControllerConfig) (*Controller, error), Controller.Reconciler
// and Controller.Run(ctx), EventRules for the informer handlers, and the
// same field names for the same things (Client, Events, Clock, Workers,
// MaxRetries, RateLimiter, Metrics, BatchPeriod, EagerStatus). Constructors
// over config structs, rather than struct literals, because each
// Reconciler validates its configuration (an error names the missing
// field, where a literal would fail on the first sync), fills in defaults
// once (the real clock, a discarding recorder), and derives state from it
// that must not change under running workers (the indexed read paths it
// detects, the ReplicaSet controller's expectations and selector cache).
//
// # Guarantees
//
//   - Nothing here does I/O, starts a goroutine or keeps global state.
//   - The read interfaces take a context.Context first, like
//     controller-runtime's client.Reader, and return shared, read-only
//     objects: callers never modify what they return.
//   - A missing object is an error for which apierrors.IsNotFound holds.
//   - [Terminal] errors satisfy errors.Is(err, [ErrTerminal]) through any
//     amount of %w wrapping; [IsTerminal] is that test.
//
// # Usage
//
// Reading from an informer cache of package informer:
//
//	deployments, err := reconcile.FromCache(dInf.Cache())
//	d, err := deployments.Get(ctx, key)
//
// Reading from anything else, e.g. a client-go lister:
//
//	reconcile.GetterFunc[*appsv1.Deployment](func(ctx context.Context, k types.NamespacedName) (*appsv1.Deployment, error) {
//		return lister.Deployments(k.Namespace).Get(k.Name)
//	})
package reconcile
