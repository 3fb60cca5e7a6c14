// Package compare runs the same scripted scenarios with ctrlkit's
// controllers and with the upstream kube-controller-manager v1.37.1, on one
// real control plane, and compares what they did: final state, ReplicaSet
// names, revisions, annotations and conditions, the sequence of ReplicaSet
// sizes, time to converge and API writes. The tests are behind the build
// tag e2e; set CTRLKIT_E2E_REPORT to a file to get the results table in
// Markdown.
package compare
