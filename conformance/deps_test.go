package conformance

import (
	_ "github.com/ctrlkit/ctrlkit/clock"
	_ "k8s.io/kubernetes/pkg/controller"
	_ "k8s.io/kubernetes/pkg/controller/deployment"
	_ "k8s.io/kubernetes/pkg/controller/deployment/util"
	_ "k8s.io/kubernetes/pkg/controller/replicaset"
)
