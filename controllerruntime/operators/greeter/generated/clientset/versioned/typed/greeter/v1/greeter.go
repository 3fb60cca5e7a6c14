package v1

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"

	greeterv1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/apis/greeter/v1"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned/scheme"
)

// GreetersGetter returns the client of a namespace's Greeters.
type GreetersGetter interface {
	Greeters(namespace string) GreeterInterface
}

// GreeterInterface reads and writes the Greeters of one namespace.
type GreeterInterface interface {
	Create(ctx context.Context, greeter *greeterv1.Greeter, opts metav1.CreateOptions) (*greeterv1.Greeter, error)
	Update(ctx context.Context, greeter *greeterv1.Greeter, opts metav1.UpdateOptions) (*greeterv1.Greeter, error)
	// UpdateStatus writes the status subresource.
	UpdateStatus(ctx context.Context, greeter *greeterv1.Greeter, opts metav1.UpdateOptions) (*greeterv1.Greeter, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*greeterv1.Greeter, error)
	List(ctx context.Context, opts metav1.ListOptions) (*greeterv1.GreeterList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*greeterv1.Greeter, error)
}

// greeters is client-go's generic typed client for Greeters.
type greeters struct {
	*gentype.ClientWithList[*greeterv1.Greeter, *greeterv1.GreeterList]
}

func newGreeters(c *GreeterV1Client, namespace string) *greeters {
	return &greeters{gentype.NewClientWithList[*greeterv1.Greeter, *greeterv1.GreeterList](
		"greeters", c.RESTClient(), scheme.ParameterCodec, namespace,
		func() *greeterv1.Greeter { return &greeterv1.Greeter{} },
		func() *greeterv1.GreeterList { return &greeterv1.GreeterList{} })}
}
