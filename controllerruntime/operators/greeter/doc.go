// Greeter is an operator written with client-go alone, in the shape of
// kubernetes/sample-controller: a package main (main.go registers its
// -kubeconfig and -master flags in init, as sample-controller does) with
// shared informers, listers and a rate-limited workqueue, and a typed
// clientset for its own kind (package generated, in code-generator's
// layout). A Greeter runs a Deployment of its image, controlled by it,
// and reports the Deployment's available pods in its status.
//
// Its tests live in package main too, as sample-controller's do: TestMain
// starts the bench (clustertest.NewServer, on the wall clock) and the
// program's own run function against it, and each test polls the cluster.
// The bench runs the Deployment and ReplicaSet controllers, a kubelet and
// the garbage collector, so the Greeter's status reports available pods.
// With -args -kubeconfig=... they run against that cluster instead.
// controller-runtime's envtest cannot be used here: it registers
// -kubeconfig on flag.CommandLine too, and the test binary would panic at
// init; TestImportsRegisterNoFlags checks that nothing the program and
// its tests import registers a flag.
package main
