// Package envtest is ctrlkit's bench in the shape of controller-runtime's
// envtest: an envtest suite runs on the bench by changing one import line,
//
//	"sigs.k8s.io/controller-runtime/pkg/envtest"
//
// to
//
//	envtest "github.com/ctrlkit/ctrlkit/controllerruntime/envtest"
//
// and nothing else: [Environment] takes the fields suites set
// (CRDDirectoryPaths, ErrorIfCRDPathMissing, CRDs, CRDInstallOptions,
// WebhookInstallOptions, Scheme, BinaryAssetsDirectory, ...), Start returns
// a *rest.Config, Stop ends it, and [WebhookInstallOptions] and
// [CRDInstallOptions] are envtest's own types. The cluster is clustertest's
// in-memory API server (see package controllerruntime/clustertest): it
// starts in milliseconds, needs no etcd or kube-apiserver binaries, and
// installs the suite's CRDs through its API, serving their kinds with
// their schemas.
//
// # Virtual time
//
// One more line runs the suite in virtual time: [RunSpecs] in place of
// Ginkgo's,
//
//	envtest.RunSpecs(t, "Controller Suite") // was RunSpecs(t, "Controller Suite")
//
// runs the specs in a testing/synctest bubble where time moves only when
// every goroutine of the suite waits, straight to the next timer: the
// suite's Eventually and Consistently polls and timeouts, its sleeps, the
// Manager's requeues and resyncs and client-go's backoffs take no wall
// time, a passing suite costs the CPU of its work, and a spec that fails
// after a two-minute Eventually fails at once. An Environment started in
// BeforeSuite then runs on the bubble's clock, its requests a millisecond
// or two each ([Environment.Latency]), one at a time in a fixed order, so
// that the same Ginkgo seed gives the same trace. What cannot live in a
// bubble is named, not waited for: a listener (a Manager's metrics or
// health-probe address the suite set), webhooks (Start refuses them:
// keep such suites on the wall clock), a connection to a real cluster,
// parallel Ginkgo. Without RunSpecs, or with CTRLKIT_WALL_CLOCK=1, the
// cluster runs on the wall clock, as the suite's Eventually expects. See
// docs/virtual-time.md for what runs on which clock, the limits, and
// measured suites.
//
// [Environment.Describe], [Environment.Trace] and [Environment.Check] say
// what happened and what is stuck, for a suite to print when a spec fails.
//
// # What it does not do
//
// What the bench cannot serve fails Start with an error that says so
// (UseExistingCluster, kube-apiserver flags) or is an error when called
// (AddUser). The binary and timeout options are accepted and ignored.
//
// # Global state
//
// [RunSpecs] owns, for the suite's duration, controller-runtime's
// metricsserver.DefaultBindAddress ("0": no metrics listener by default),
// math/rand's global source (seeded with Ginkgo's seed) and the handlers
// of the interrupt and progress signals, and restores them.
//
// This package imports controller-runtime's envtest, for its
// WebhookInstallOptions and CRDInstallOptions types and their preparation
// of webhook serving; controller-runtime's envtest in turn registers the
// --kubeconfig flag on flag.CommandLine (in its pkg/client/config) and adds
// the apiextensions types to client-go's global scheme, at init. A suite
// that imported envtest already had both. A package main that defines its
// own -kubeconfig flag (the shape of kubernetes/sample-controller) cannot
// import it: use clustertest's Server or Test there, which register
// nothing.
package envtest
