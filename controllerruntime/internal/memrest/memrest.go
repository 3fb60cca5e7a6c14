// Package memrest is test support for this module: the rest.Config of an
// in-process memcluster, written once for the tests that build their own
// cluster (clustertest builds the bench's the same way).
package memrest

import (
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// Config returns a rest.Config whose requests h serves in-process (h is
// memcluster.NewHandler of a cluster, or a handler in front of it), with
// no client-side throttling: the cluster answers at once.
func Config(h http.Handler) *rest.Config {
	return &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: h}, QPS: -1}
}
