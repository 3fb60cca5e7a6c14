// Package e2e runs ctrlkit's controllers against a real kube-apiserver.
//
// The tests are behind the build tag e2e. They start one control plane
// (etcd + kube-apiserver, plus the upstream garbage collector, disruption
// and resource quota controllers) for the
// package through hack/controlplane.sh, give each test its own namespace,
// run kube.Operator in-process for that namespace, and play kubelet with
// package simkubelet. TestWhyUpstream starts a second control plane whose
// kube-controller-manager runs the Deployment and ReplicaSet controllers
// too, to check kubectl ctrlkit why against them. Run them with
// hack/e2e.sh, or:
//
//	go test -tags e2e -p 1 ./e2e/...
package e2e
