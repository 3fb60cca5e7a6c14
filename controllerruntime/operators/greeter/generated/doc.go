// Package generated holds the typed clientset, listers and informers of
// the Greeter kind, in the layout and with the API that Kubernetes'
// code-generator (client-gen, lister-gen, informer-gen) gives them,
// written by hand for this example: an operator written with client-go
// gets its kind's clients this way.
package generated
