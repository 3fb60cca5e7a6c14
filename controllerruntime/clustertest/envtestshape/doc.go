// Package envtestshape is an operator laid out as a kubebuilder project
// lays out its controller (an API type, a reconciler, its CRD under
// config/crd/bases), with its test suite in the shape envtest suites take:
// Ginkgo's BeforeSuite starts the environment and a Manager, the specs
// poll with Gomega's Eventually at its default timeout and interval, and
// AfterSuite stops everything.
//
// The suite runs on package controllerruntime/envtest's Environment: the
// lines that build the environment are the only ones that name the bench,
// and with CTRLKIT_ENVTEST=1 (the control plane binaries in KUBEBUILDER_ASSETS)
// they build envtest's instead, for comparison; the specs that need the
// built-in controllers are then skipped. It is the proof that
// such suites switch to the bench by that line, in real time; and since
// its Environment turns on the bench's built-in Deployment, ReplicaSet and
// garbage collection controllers and its kubelet (Controllers:
// clustertest.AllControllers), its specs also check what envtest cannot
// show (the Site reports Available once its pods are ready, and
// deleting it deletes its Deployment).
package envtestshape
