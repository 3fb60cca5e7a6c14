package webapp

import (
	_ "embed"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed crd.yaml
var crdYAML []byte

// CRD returns the WebApp CustomResourceDefinition (crd.yaml), for
// envtest's CRDInstallOptions or a client's Create.
func CRD() *apiextensionsv1.CustomResourceDefinition {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdYAML, &crd); err != nil {
		panic(fmt.Sprintf("webapp: crd.yaml: %v", err)) // embedded at build time, checked by the tests
	}
	return &crd
}
