// Package greeter is an operator written with client-go alone, in the
// shape of Kubernetes' sample-controller: shared informers, listers and a
// rate-limited workqueue, a typed clientset for its own kind (package
// generated, in code-generator's layout). A Greeter runs a Deployment of
// its image, controlled by it, and reports the Deployment's available
// pods in its status.
//
// Its tests are a plain go test suite in envtest's shape: TestMain starts
// the environment (envtest with CTRLKIT_ENVTEST=1 and the control plane
// binaries in KUBEBUILDER_ASSETS, else the bench) and the controller,
// and each test polls the cluster on the wall clock. The bench runs the
// Deployment and ReplicaSet controllers, a kubelet and the garbage
// collector, which envtest does not: the tests that need them are
// skipped on envtest.
package greeter
