// Package testsupport holds what this module's tests would otherwise
// write again in each package: the rest.Config of an in-process
// memcluster (clustertest builds the bench's the same way) and a summary
// of an object's managedFields.
package testsupport

import (
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// MemclusterConfig returns a rest.Config whose requests h serves
// in-process (h is memcluster.NewHandler of a cluster, or a handler in
// front of it), with no client-side throttling: the cluster answers at
// once.
func MemclusterConfig(h http.Handler) *rest.Config {
	return &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: h}, QPS: -1}
}

// Managers returns obj's managedFields entries as
// "manager/operation[/subresource]", sorted.
func Managers(obj metav1.Object) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
