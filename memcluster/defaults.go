package memcluster

// The API defaults of every kind are those of package defaults (which
// holds kube-apiserver v1.37's for the built-in kinds); a Kind's Default
// hook calls it. Pod-spec defaults matter beyond pods: they are applied to
// the templates of Deployments and ReplicaSets, and the Deployment
// controller hashes the defaulted template, so leaving them out would
// change every pod-template-hash compared with a real cluster.

func ptrTo[T any](v T) *T { return &v }
