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
// The cluster runs on the wall clock, as the suite's Eventually expects.
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
