// Package clustertest is a test bench for Kubernetes operators: unchanged
// controller-runtime and client-go code runs against an in-memory API
// server (ctrlkit's memcluster) with the built-in Deployment, ReplicaSet
// and garbage-collection controllers and a simulated kubelet, on virtual
// time. A reconciler that returns RequeueAfter: time.Hour runs again one
// virtual hour later, in microseconds of wall time, and the same test
// gives the same trace of writes and events run after run.
//
//	func TestMyOperator(t *testing.T) {
//		clustertest.Test(t, clustertest.Options{Scheme: scheme, Types: []client.Object{&v1.WebApp{}}},
//			func(t *testing.T, c *clustertest.Cluster) {
//				mgr := c.NewManager(ctrl.Options{})
//				if err := (&controller.WebAppReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
//					t.Fatal(err)
//				}
//				c.Start(mgr)
//				c.Advance(time.Second) // the controller's caches sync
//				... c.Client().Create(t.Context(), webapp) ...
//				c.MustRunUntil("webapp ready", func() bool { ... }, time.Hour)
//			})
//	}
//
// # What a test gets
//
//   - [Cluster.Config]: a *rest.Config for any client-go or controller-runtime
//     code: typed clientsets, dynamic and metadata clients, discovery and
//     REST mappers, informers, a Manager ([Cluster.NewManager] sets the
//     options a bench needs: no metrics or health listeners, no leader
//     election). Requests never touch a socket: the config's transport
//     calls memcluster's REST handler in process (JSON, YAML and protobuf,
//     watches, patches of every type, status and scale subresources; see
//     memcluster.Handler for what it serves and how it differs from
//     kube-apiserver).
//   - Your own kinds ([Options.Types]): any Go type registered in the scheme
//     is served with CustomResourceDefinition semantics: generation,
//     resourceVersion and conflicts, a status subresource if it has a Status
//     field, owner references and garbage collection like the built-in kinds.
//   - Your CRDs ([Options.CRDDirectoryPaths], [Options.CRDs], as envtest
//     takes them): installed through the API as envtest installs them,
//     their custom resources validated (OpenAPI schema, CEL rules),
//     defaulted and pruned by kube-apiserver's own code (package
//     controllerruntime/crd), in every served version;
//     CustomResourceDefinitions the test creates are served too.
//   - Built-in controllers, each switchable ([Options.Disable]): ctrlkit's
//     Deployment and ReplicaSet controllers (kube-controller-manager v1.37's
//     behaviour), the garbage collector, and the kubelet model
//     ([Options.Kubelet]: start and readiness delays, crash loops, bad
//     images, drawn from the seed). Disable the Deployment and ReplicaSet
//     controllers to write a Deployment's status by hand.
//   - Faults ([Options.Faults], [Cluster.SetFaults]): conflicts, 429, 500,
//     503 and timeouts at a rate per verb and resource, latency, lagging and
//     dropped watches, from the same seeded injector the built-in
//     controllers are tested with; your controller sees them as a real
//     API server's errors.
//   - Time: [Cluster.Settle] lets the current instant finish,
//     [Cluster.Advance] lets virtual time pass, [Cluster.RunUntil] runs
//     until a condition holds and, if it does not within the limit, says
//     which Deployments are not rolled out and which pods are not ready
//     and why ("container app ImagePullBackOff").
//   - [Cluster.Trace]: every write the server stored and every event, with
//     its virtual time; [Cluster.Check]: planner.Check on every state the
//     Deployments went through (surge and availability bounds, revisions,
//     completion), whoever manages them.
//
// # Design
//
// Virtual time comes from Go's testing/synctest: [Test] runs the test in a
// bubble, where time.Now, timers and sleeps are virtual and time moves only
// when every goroutine of the bubble is durably blocked, straight to the
// next timer. That is what lets unchanged code take part: client-go's and
// controller-runtime's queues, rate limiters, informers and RequeueAfter
// all use the time package, and none needs to know about the bench. It is
// also exact: time cannot move while any goroutine can still run, however
// busy the machine is. (ctrlkit's own packages have their own exact clock,
// clock.Fake with work accounting, for code that must not need a bubble;
// code you did not write cannot report its work to it, so the bench uses
// the bubble and runs the built-in controllers on the real clock, which
// inside the bubble is virtual.)
//
// Determinism comes from a gate (memcluster.Config.Gate) in front of every
// request, every watch event delivery and every kubelet pass. Once every
// goroutine of the bubble is blocked, the gate lets exactly one waiting
// step through, the least in an order that depends only on the steps
// (deliveries by resourceVersion and watch, requests by verb, resource and
// name), never on which goroutine happened to run first; what that step's
// goroutine does until it blocks again happens before the next step. So
// the interleaving of your controller, the built-in ones and the kubelet
// is a function of the seed. [Options.Concurrent] turns the gate off:
// steps then happen as their goroutines run, time stays exact, the order
// within an instant does not.
//
// Alternatives considered: a fake clock injected into controller-runtime
// (its Manager has no clock option for its queues and caches, and
// RequeueAfter goes through client-go's delaying queue on the real clock);
// controller-runtime's fake client (no watches, no time, no admission);
// envtest (a real API server on wall-clock time, without the controllers
// that make a Deployment's pods or collect garbage; see the comparison in
// the README).
//
// # Rules and limits
//
//   - Everything of a test runs inside the function given to [Test]:
//     goroutines started outside the bubble do not take part in its time,
//     and synctest forbids channels shared across its edge.
//   - A goroutine blocked on a sync.Mutex or in a system call is not
//     durably blocked: time waits for it. A goroutine that spins without
//     blocking keeps the instant from ending (a busy loop in a test hangs
//     the test, as it would deadlock a real clock's test that waits for it).
//   - [Cluster.RunUntil] checks its condition after the cluster stored a
//     write or delivered a watch event and everything settled. A condition
//     may read from the cluster (c.Client() or your manager's cache), but
//     not write to it, and a condition that depends on something else
//     (a variable your reconciler sets) is checked at those moments only.
//   - The bench's server answers client-go's watch-list requests
//     (sendInitialEvents) as a kube-apiserver without the WatchList feature
//     does, so informers list and then watch: client-go keeps a watch-list's
//     initial objects in a map and would hand them on in random order.
//   - One order the gate cannot fix: an informer that has synced hands the
//     objects it already holds to a newly added event handler in the random
//     order of a map. controller-runtime adds a controller's handlers once
//     its caches have synced, about 200 virtual milliseconds after
//     [Cluster.Start]; objects created before then reach the controller in
//     an order that differs from run to run (each is still reconciled).
//     For a reproducible trace, create them after the controller runs:
//     c.Advance(time.Second) after c.Start(mgr).
//   - Randomness the bench does not seed breaks replay: math/rand's global
//     source, and what draws from it, such as the jitter of client-go's
//     retry.DefaultRetry and wait.Jitter. Retry without jitter in tests
//     that compare traces (a wait.Backoff with Jitter 0).
//   - Event objects written by your controllers' recorders appear in the
//     trace as writes of events; the built-in controllers' events appear in
//     the trace directly (they are not stored as Event objects).
package clustertest
