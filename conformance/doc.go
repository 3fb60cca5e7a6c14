// Package conformance compares ctrlkit's decisions with upstream
// Kubernetes v1.37.1 on random inputs. It is a separate module because it
// depends on k8s.io/kubernetes, which importers of ctrlkit must never pay for.
package conformance
