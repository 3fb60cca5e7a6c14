// Package clustertest is a test bench for Kubernetes operators: unchanged
// controller-runtime and client-go code runs against an in-memory API
// server (ctrlkit's memcluster) with the built-in Deployment, ReplicaSet
// and garbage-collection controllers and a simulated kubelet. It comes in
// two modes:
//
//   - [Test], for plain go test code: virtual time. A reconciler that
//     returns RequeueAfter: time.Hour runs again one virtual hour later, in
//     microseconds of wall time, and the same test gives the same trace of
//     requests, writes and events run after run, faults included.
//   - [Server], for code that does not run inside Test's function: a
//     TestMain that starts a client-go operator (on the wall clock), or a
//     suite written for envtest (Ginkgo's BeforeSuite and AfterSuite,
//     Gomega's Eventually). Package controllerruntime/envtest builds
//     envtest's Environment on it, so that such a suite switches to the
//     bench by changing its import line, and its envtest.RunSpecs runs
//     the suite in a synctest bubble, where a Server runs on the virtual
//     clock as Test's cluster does (docs/virtual-time.md).
//
// Pick [Test] for new tests, and whenever time matters (requeues after an
// hour, progress deadlines, a kubelet's delays), or a failure must replay
// exactly: virtual time is exact and costs nothing, and the trace is a
// function of the seed. Pick package controllerruntime/envtest to run an
// existing envtest suite unchanged, with envtest.RunSpecs in virtual time
// (its Eventually, sleeps and requeues take no wall time), or on the wall
// clock where it must (webhooks, real sockets); there the bench's kubelet
// makes pods ready at once, so an Eventually's default second is enough
// for a rollout.
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
// and, in the TestMain of a client-go operator:
//
//	srv, err := clustertest.NewServer(clustertest.Options{CRDDirectoryPaths: []string{"config/crd"}})
//	...
//	kube := kubernetes.NewForConfigOrDie(srv.Config())
//	... start the informers and the controller, m.Run(), srv.Stop()
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
//     memcluster.NewHandler for what it serves and how it differs from
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
//     controllers are tested with; every client (your Manager's cache and
//     client, uncached readers, clientsets, dynamic clients, raw watches,
//     the test's own client, the built-in controllers) sees them as a real
//     API server's errors.
//   - Time: [Cluster.Settle] lets the current instant finish,
//     [Cluster.Advance] lets virtual time pass, [Cluster.RunUntil] runs
//     until a condition holds.
//   - [Cluster.Trace]: every request the server admitted (verb, object,
//     client, the field manager it would be recorded as, the answer, the
//     faults injected), every write it stored, every dropped watch and every
//     event, with its virtual time; [Cluster.Check]: planner.Check on every
//     state the Deployments went through (surge and availability bounds,
//     revisions, completion), whoever manages them.
//
// # Admission webhooks and policies
//
// The cluster admits writes as kube-apiserver v1.37 does, with its own
// admission plugins: the mutating and validating webhooks of the
// MutatingWebhookConfigurations and ValidatingWebhookConfigurations you
// create (or an [Environment] installs from its WebhookInstallOptions, as
// envtest does), called over HTTPS, and ValidatingAdmissionPolicies with
// their bindings and params. Admission's userInfo names the client (the
// bench's name of it: "manager", "client", "environment", ...). A
// webhook server must run outside a [Test]'s bubble (one listening inside
// it stops virtual time); in an [Environment], a suite's Manager serves
// its webhooks as on envtest. See docs/admission.md for what is
// supported, the order of the stages and what is not modelled.
//
// # Answers that say what is stuck
//
// When [Cluster.RunUntil] gives up (its limit reached, or at once when
// something started with [Cluster.Start] stopped with an error), its error
// lists, one line each:
//
//   - what stopped, and why (a Manager that timed out waiting for a cache);
//   - kinds a Manager's controllers wait on: "kind source *v1alpha1.Widget
//     not served by the bench: no matches for kind …", a kind not in its
//     scheme, a cache that does not sync, and the reads waiting for it;
//   - reconcile workers blocked elsewhere than in the cluster: "worker
//     blocked (chan receive) in example.com/op.(*Reconciler).Reconcile
//     (controller.go:52)";
//   - custom resources whose status says they are not ready, by their
//     conditions: "webapp default/shop: Ready=False reason PodsNotReady
//     message \"0 of 2 pods ready\"", a generation the status has not
//     observed, or no status at all;
//   - Deployments not rolled out, pods not ready and why ("container app
//     ImagePullBackOff");
//   - requests that keep failing: "failing: PUT webapps/status in default
//     from manager \"op\", 12 times in a row (the last: default/shop: 409
//     (injected 409 Conflict) at +41s)";
//   - REST paths the bench does not serve, and when the cluster last
//     changed.
//
// [Server.Describe] gives the same lines (but the blocked workers)
// for a suite to print when an Eventually fails. A violation of
// [Cluster.Check] names the write that caused it, who made it and what it
// changed: "RevisionDecreased … by PUT deployments default/web from
// manager \"webapp-controller\" (annotation
// deployment.kubernetes.io/revision removed)".
//
// # Exploring interleavings
//
// The races that hurt controllers are orderings: a sync that reads a
// cache one event behind its own write, a status event delivered before
// the event of the object it reports on. In the canonical order a bench
// runs one of them; [Explore] runs a scenario on many benches, each seed
// choosing the order of the steps ready at each instant
// ([Options.Interleave]), checks properties at every step, and shrinks
// the first violation to the few choices that cause it:
//
//	func TestNoDuplicateChild(t *testing.T) {
//		clustertest.Explore(t, clustertest.ExploreOptions{
//			Options:    clustertest.Options{Scheme: scheme, Types: []client.Object{&v1.Site{}}},
//			Seeds:      50, // CLUSTERTEST_SEEDS=2000 before a release
//			Properties: []clustertest.Property{oneChild, clustertest.DeploymentsCheck(), clustertest.Converges(time.Hour)},
//		}, func(t testing.TB, c *clustertest.Cluster) {
//			... the body of a Test: a Manager, c.Start, c.Client().Create, c.MustRunUntil ...
//		})
//	}
//
// Every choice is one Kubernetes allows: each watch delivers its events in
// order, and a goroutine's requests are served in order; requests in
// flight from different goroutines, and events on their way to different
// watches, may go in any order. A controller whose workqueue is
// [NewQueue]'s (controller.Options.NewQueue) also has its picks explored:
// which of the keys ready in its queue a worker gets next, and so the
// order in which keys whose timers fire at one instant (RequeueAfter, a
// rate limiter's backoff) are handed out; a key is still never handed to
// two workers at once. [Options.Perturb] adds perturbations drawn from
// the seed at any step, each switched on by its flag ([AllPerturbations]
// for every one):
//
//   - [PerturbLag] ("40:lag0=2s"): a watch held back for 50 ms to 10 s,
//     an informer behind the API server and behind its own client's
//     writes;
//   - [PerturbWatchClose] ("41:close1"): a watch closed, its client
//     watches again from the last resourceVersion it saw, losing nothing;
//   - [PerturbRelist] ("41:relist1"): a watch ended with 410 Expired, its
//     client (a reflector) lists again a second or so later: the events
//     in between are lost, updates collapse into one, a deletion arrives
//     as the delete of the last state the informer knew;
//   - [PerturbRestart] ("57:restart0"): a restart of what
//     [Cluster.StartRestartable] started (your Manager, rebuilt from
//     scratch: empty caches, queues and memory);
//   - [PerturbConflict] ("60:conflict2"): another writer ("other-writer"
//     in the trace) changes an object just before an update or patch of
//     it is served, which is answered 409 if it carries the
//     resourceVersion it read; never one of the test's own writes
//     ([Cluster.Client]'s, a direct client's) unless
//     [Options.PerturbTestClient] says so;
//   - [PerturbHandover] ("70:handover0=20s"): the leader of a
//     [Cluster.StartLeaderElected] group (replicas of your operator with
//     controller-runtime's leader election on a Lease, in virtual time)
//     stalls 20 or 40 s: its renewals time out, it steps down and starts
//     again as a standby, another instance takes the Lease over, and what
//     it had in flight with a context that outlived its Manager lands
//     afterwards.
//
// The seed still draws what it drew before (faults, the kubelet's timing,
// names). A schedule is the list of the choices that differ from the
// canonical order, "12:1,18:pick1@app#2,40:lag0=2s,41:relist1,57:restart0"
// ([Schedule]); seed and schedule replay a bench exactly
// ([Options.Schedule], [ExploreOptions.Replay], CLUSTERTEST_REPLAY).
//
// Writing a property. A [Property] has a Name, and Always, checked after
// every step that stored a write, or AtEnd, checked once the scenario has
// passed. Always reads the cluster's stored state from its [State]
// (Objects, Get, [ObjectsOf], and Writes: the writes of the step just
// taken, each with its client in By), never through a client: the cluster
// is paused while it runs, and it runs thousands of times per bench, so
// keep it to the objects the step wrote. Return an error naming the
// objects and the values that break it: it becomes the report's message.
// A property that judges what a controller wrote ("ready only when rolled
// out") looks at Writes; one about the whole state ("at most one child")
// looks at Objects. AtEnd may use the cluster as a test does (RunUntil,
// reads): for eventual properties such as [Converges]. Built in:
// [DeploymentsCheck] (planner.Check as [Cluster.Check] runs it, at every
// step that wrote a Deployment or its ReplicaSets), [NoExtraPods] and
// [NoLostPods] (no pod created beyond, or deleted below, a ReplicaSet's
// spec.replicas), [Converges], [NoStaleWrites] (no update or patch
// accepted with a resourceVersion other than the stored one: a check of
// the API model), the opt-in [NoLostUpdates] (no update without a
// resourceVersion computed from a version older than the one it
// replaced: Written says, for each write, the request's verb and
// precondition, the version it replaced and who wrote that, and the
// newest version its writer had seen), and [LeaderOnlyWrites] (no write
// by an instance of [Cluster.StartLeaderElected] that does not hold the
// Lease). A failure of the scenario itself
// (t.Fatal, a MustRunUntil that gives up) is the violation of a property
// named "scenario": scenarios take a testing.TB, whose failures Explore
// records instead of failing the test.
//
// Reading a shrunk trace. The report gives the property and its message,
// the seed, the replay line, the steps that matter and the trace up to
// the violation:
//
//	clustertest: property "ready means rolled out" violated after step 70, seed 9 (found after 9 seeds):
//	    site default/shop written ready for shop:2 by manager, but its Deployment (generation 2, observed 1, image shop:2) has 2 updated ...
//	shrunk from 39 choices (reorderings, perturbations) to 1 in 18 runs; replay it with
//	    CLUSTERTEST_REPLAY="seed=9 schedule=69:2" go test -run '^TestExploreFindsTheStaleReady$'
//	the steps that matter (where the order differs from the canonical one):
//	    step 69: MODIFIED sites default/shop@29 to manager (watch 5) goes ahead of MODIFIED deployments default/shop@28
//	        to kube-controller-manager (watch 1); MODIFIED deployments default/shop@28 to manager (watch 2)
//
// Each line of the steps that matter is one choice of the shrunk
// schedule: here the Site's own status event reached the manager's Site
// watch before the Deployment event that its cache needed (the write of
// resourceVersion 28, an update the operator made a step earlier), so the
// reconcile it caused read a Deployment one write behind. Find the write
// in the trace by its resourceVersion ("modified deployments default/shop
// rv=28"), then the reconcile's requests after the reordered delivery:
// the write that breaks the property is the trace's last line. A
// perturbation reads "kube-controller-manager's watch 2 of pods is held
// back 10s, with MODIFIED pods default/web-1@53 next on it", "… is
// closed before …", "… expires (410 Gone) before …: manager lists apps
// again, the events in between lost", "other-writer changes apps
// default/app-1 just before update/status apps default/app-1 by manager",
// "the leader of lease kube-system/op stalls 20s"; a queue's pick reads
// "the queue of controller app hands out default/blog ahead of
// default/base". The trace marks them too ("watch 5 of sites by manager
// held back 500ms (explored)", "manager lost the lease …: it stops and
// starts again as a standby", "request PATCH apps default/shop from
// other-writer"); after a relist, look for the informer's list ("GET apps
// (all namespaces) from manager") and what the reconciles after it did
// not see. Shrinking keeps the seed (faults and the kubelet's timing stay
// as they were) and drops choices, then lowers what is left, while the
// same property still breaks. Without a choice the later steps' numbers
// move, so it follows the other choices by what they acted on (the step
// let through, the delivery or request perturbed), and by number only
// when that fails: a choice kept only to hold the others' numbers goes.
// What remains is needed, in that run, for that violation; the schedule
// reported is what that run chose, and replays it exactly.
//
// What a seed cannot reorder: steps that do not pass the gate. A
// controller's workqueue other than [NewQueue]'s (controller-runtime's
// default priority queue, say) hands keys to its workers in its own
// order, and timers fire at their virtual time, in the order the Go
// runtime fires them; the seed reorders what they cause (requests,
// deliveries, and the keys of a NewQueue), not the timers themselves.
// Benches of one Explore run at once
// share math/rand's global source (client-go's jitter), so the seed that
// breaks a property is first replayed alone; if it does not break it
// alone, the report says so.
//
// How long to explore. A seed of the site example (an operator, a
// custom resource, two rollouts of two pods: about 60 writes, 250 steps)
// costs about 30 to 35 ms of CPU, 31 to 33 seeds per CPU-second in the
// canonical order and 29 to 31 with every perturbation (BenchmarkExplore in
// examples/controllerruntime/site); [Options.UntrackedBuiltinWrites] and
// a larger GOGC trade fidelity or memory for CPU (docs/explore.md has the
// numbers). [ExploreOptions.Parallel] runs one bench per core
// (GOMAXPROCS), and the benches share nothing but the process (math/rand's
// global source, the garbage collector, client-go's parsed schemas). Keep
// a test's Seeds in the default suite to what runs in a few seconds (10
// to 50), and run thousands before a release: CLUSTERTEST_SEEDS=2000 go
// test -run TestExplore ./... takes minutes on two cores. A race whose
// window is one event wide is usually found in tens of seeds; one that
// needs a perturbation at the right step, and a timing of the kubelet's,
// in hundreds to thousands. Keep the failing replay as a test
// (ExploreOptions.Replay, ExpectViolation) beside the fix: a replay is
// exact only for the same scenario and bench, so after a change to
// either, explore again for a new replay line.
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
// request, every watch event delivery and every kubelet pass (and every
// worker's pick from a [NewQueue], so that the keys it picks among are
// all in). Once every
// goroutine of the bubble is blocked, the gate lets exactly one waiting
// step through, the least in an order that depends only on the steps
// (deliveries by resourceVersion and watch, requests by verb, resource,
// name and client), never on which goroutine happened to run first; what
// that step's goroutine does until it blocks again happens before the next
// step. So the interleaving of your controller, the built-in ones and the
// kubelet is a function of the seed. Each request carries the name of its
// client (the rest.Config it was built from: "manager", "client",
// "config", numbered from the second on; the built-in controllers by
// name): two informers of one kind, or the test's read and an operator's,
// are otherwise alike, and the goroutine that happened to run first would
// decide which watch gets which number and which request a fault hits.
// With [Options.Interleave] the seed picks among the waiting steps
// instead of the least (see Exploring interleavings above).
// [Cluster.RunUntil] checks its condition at quiescent instants only, so
// how often it runs, and the requests it makes, do not depend on timing
// either. [Options.Concurrent] turns the gate off: steps then happen as
// their goroutines run, time stays exact, the order within an instant does
// not.
//
// Alternatives considered: a fake clock injected into controller-runtime
// (its Manager has no clock option for its queues and caches, and
// RequeueAfter goes through client-go's delaying queue on the real clock);
// controller-runtime's fake client (no watches, no time, no admission);
// envtest (a real API server on wall-clock time, without the controllers
// that make a Deployment's pods or collect garbage; see the comparison in
// docs/testbench.md).
//
// # Process-wide state the bench handles
//
// Libraries keep process-wide state that would trap a bench. Importing this
// package sets it once, before any test runs:
//
//   - apimachinery's utilruntime.ErrorHandlers rate-limit HandleError with
//     a sleep computed from a clock read when the process started: in a
//     bubble, whose clock starts at 2000-01-01, the first error of any
//     informer or worker slept about 26 virtual years and the test ended in
//     a deadlock. The bench removes that limiter (logging stays).
//   - math/rand's global source, which client-go's jitter draws from (a
//     reflector's backoff after a failed list or watch, an event
//     broadcaster's retry, controller-runtime's resync periods), is
//     seedable again (GODEBUG randseednop=0), and [Test] seeds it with
//     [Options.Seed].
//
// Each [Test] also asks controller-runtime's logger, outside its bubble,
// whether it is time for its fallback: controller-runtime silences its
// logs if nobody called log.SetLogger within 30 seconds of the process's
// start, a time it reads from the clock, which inside a bubble reads 2000:
// the fallback would never come, and every logger a Manager derives would
// stay queued for ever.
//
// Every bench handles what would otherwise outlive it or take the binary
// down:
//
//   - When the test ends, the bench stops what it started and waits (30
//     virtual seconds) for the goroutines of the bubble to end. Goroutines
//     still running fail the test, named with where they wait and who
//     started them, and so does a deadlock (every goroutine blocked, no
//     timer pending): testing/synctest would otherwise panic and kill the
//     whole test binary.
//   - A livelock (hundreds of thousands of steps at one virtual instant, or
//     five thousand alike in a row: a loop that retries at once, for ever)
//     fails the test with the steps that repeat, and the cluster fails
//     every request from then on instead of hanging until the test binary's
//     timeout.
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
//     c.Advance(time.Second) after c.Start(mgr). A Manager restarted by
//     [PerturbRestart] meets the objects that exist in that random order:
//     a schedule with a restart replays exactly up to the restart only
//     (with MaxConcurrentReconciles above 1 the workers' requests meet at
//     the gate, which orders them again).
//   - Replay with the global random source holds while no other code
//     draws from it at the same time: benches that run in parallel
//     (t.Parallel) share it. Two alike requests of one client at one
//     instant (two workers reading one object) are ordered as their
//     goroutines arrive. controller-runtime draws each informer's resync
//     period (about 10 virtual hours) concurrently, so past nine virtual
//     hours of one Manager resyncs may come in a different order.
//   - Discovery requests, and requests refused before they reach a kind (a
//     path the bench does not serve), are not in the trace.
//   - Event objects written by your controllers' recorders appear in the
//     trace as writes of events; the built-in controllers' events appear in
//     the trace directly (they are not stored as Event objects).
//   - A [Server] runs on the wall clock, with its steps as their
//     goroutines run: its trace differs from run to run, and it names no
//     blocked workers.
package clustertest
