// Package website is an operator with admission webhooks of the shapes
// real operators have, for the bench's admission (docs/admission.md): a
// Website (web.ctrlkit.dev/v1) is defaulted and validated by webhooks
// built with controller-runtime's webhook builder (a typed Defaulter and
// Validator, on create, update and delete), and the pods of a Website
// are mutated by an admission.Handler served at /mutate--v1-pod, as
// kubernetes-sigs/lws's pod webhook is. Its controller keeps a
// Deployment of each Website.
//
// Its Ginkgo suite is written as kubebuilder scaffolds webhook suites
// (WebhookInstallOptions from config/webhook, a Manager whose webhook
// server listens where they say, a TLS dial until it answers). The
// environment line picks envtest (CTRLKIT_ENVTEST=1, with the control
// plane binaries in KUBEBUILDER_ASSETS) or the bench
// (clustertest.Environment, the default); the specs are the same, but
// for one that needs the bench's Deployment controller and kubelet.
package website
