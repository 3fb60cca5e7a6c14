// Package e2e runs ctrlkit's controllers in a controller-runtime Manager
// against a real etcd and kube-apiserver (controller-runtime's envtest),
// with a simulated kubelet that makes pods Running and Ready. The tests
// are behind the build tag e2e and need the control-plane binaries that
// kube/hack/controlplane.sh builds: run them with hack/e2e.sh.
package e2e
