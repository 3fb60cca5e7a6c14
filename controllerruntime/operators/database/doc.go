// Package database is an operator that writes everything it writes with
// server-side apply (controller-runtime's client.Apply with client-go's
// apply configurations, and an unstructured apply configuration for its
// own status): a Database owns a StatefulSet of its replicas, a
// PersistentVolumeClaim for its backups and a Job that migrates the
// schema of each image.
//
// Its Ginkgo suite is written as envtest suites are; the environment
// line picks envtest (CTRLKIT_ENVTEST=1, with the control plane binaries
// in KUBEBUILDER_ASSETS) or the bench (package controllerruntime/envtest, the
// default). The bench runs the garbage collector, which envtest does not:
// the spec that deletes a Database is skipped on envtest.
package database
