// Package webapp is an operator of the usual kubebuilder shape, written
// against controller-runtime as for a real cluster: a WebApp custom
// resource (webapp.example.com/v1) asks for an image, a replica count and
// a port; the [Reconciler] makes a Deployment and a Service for it, both
// controlled by the WebApp through owner references (deleting the WebApp
// deletes them, by garbage collection), waits for the Deployment to roll
// out and be Available, sets status.ready, and looks again every hour
// ([RecheckInterval]).
//
// Nothing in it knows about ctrlkit. Its tests run the same test code on
// three backends: ctrlkit's clustertest bench (in-memory API server,
// built-in Deployment, ReplicaSet and garbage-collection controllers, a
// simulated kubelet, virtual time), controller-runtime's envtest (a real
// etcd and kube-apiserver, no controllers) and controller-runtime's fake
// client; see the README of the parent directory for what passes where.
package webapp
