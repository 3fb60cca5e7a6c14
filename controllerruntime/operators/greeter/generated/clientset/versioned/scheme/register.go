// Package scheme holds the scheme, codecs and parameter codec of the
// clientset: client-go's kinds and the Greeter API group.
package scheme

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	greeterv1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/apis/greeter/v1"
)

var (
	// Scheme has the Greeter API group.
	Scheme = runtime.NewScheme()
	// Codecs encode and decode its kinds.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec encodes the options of requests.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	if err := greeterv1.AddToScheme(Scheme); err != nil {
		panic(err) // registering known types cannot fail
	}
}
