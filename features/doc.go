// Package features holds the feature gates of kube-controller-manager
// v1.37 that its Deployment and ReplicaSet controllers consult, as one
// value both controllers' configs take ([Gates]).
//
// The zero [Gates] is v1.37's defaults, so a config that does not set it
// behaves as a default kube-controller-manager. To match a cluster that
// switches a gate, set its field:
//
//	gates := features.Gates{PodDeletionCost: features.Off}
//	c, err := replicaset.NewController(replicaset.ControllerConfig{
//		ReplicaSets: rsInformer, Pods: podInformer, Client: client, FeatureGates: gates,
//	})
//
// Each gate's behaviour, on and off, is upstream's; what each controller
// does with it is in its package doc. The ctrlkit-controller command (module
// kube) takes --feature-gates with kube-controller-manager's syntax and
// answers, through k8s.io/component-base/featuregate, and registers
// client-go's gates as kube-controller-manager does; [Known] gives it the
// specs of these gates.
//
// Not here: client-go's gates (AtomicFIFO, InOrderInformers,
// WatchListClient, ...) govern client-go's informers and clients, which
// this module does not use; its own informer and workqueue behave as
// client-go v0.37 does with them at their defaults. The
// LogarithmicScaleDown gate was removed in v1.37: its behaviour (the
// log-scaled ages of the deletion ranking) is always on.
package features
