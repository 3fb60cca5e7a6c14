// Package admission is the bench's admission: kube-apiserver's
// admission webhooks and policies, run by k8s.io/apiserver's own plugins
// (MutatingAdmissionPolicy, MutatingAdmissionWebhook,
// ValidatingAdmissionPolicy, ValidatingAdmissionWebhook, in
// kube-apiserver v1.37's order) around memcluster's writes, through the
// seam memcluster.Config.Admission (internal/admit).
//
// The plugins read their configurations, the namespaces and the
// policies' parameters with informers on the cluster itself, through
// its in-process transport, as the cluster's own client (admit.WithLoopback:
// no Gate, no injected faults, not traced). They call webhooks over
// HTTPS, at the clientConfig's url or at a ready endpoint of its service
// (see serviceResolver), with its caBundle. What this package adds to
// the plugins is what kube-apiserver would give them: attributes and
// object interfaces for the cluster's external types (the objects are
// in the request's version already), the equivalent resources from the
// cluster's discovery, an authorizer that allows everything, and a
// moment's wait so that a configuration written before a request is
// used by it (see track.go).
//
// Nothing starts before the first configuration is written: a cluster
// without one admits every write at once.
package admission
