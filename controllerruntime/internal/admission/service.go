package admission

import (
	"context"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/util/proxy"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// serviceResolver resolves the service of a webhook's clientConfig as
// kube-apiserver does with --enable-aggregator-routing: to a ready
// endpoint of the Service's EndpointSlices, for the Service port the
// webhook names (the cluster has no network of cluster IPs for it to
// reach). A test that serves a webhook behind a Service points an
// EndpointSlice of it at its server's address (127.0.0.1, say). It reads
// the cluster at each call, as the cluster's own client (loopback).
type serviceResolver struct{ client kubernetes.Interface }

var _ webhookutil.ServiceResolver = serviceResolver{}

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return proxy.ResolveEndpoint(liveServices{r.client, namespace}, liveSlices{r.client}, namespace, name, port)
}

// liveServices is a ServiceLister that reads the cluster (Get only, which
// is what the resolution uses).
type liveServices struct {
	client    kubernetes.Interface
	namespace string
}

var _ corelisters.ServiceLister = liveServices{}

func (l liveServices) List(selector labels.Selector) ([]*corev1.Service, error) {
	list, err := l.client.CoreV1().Services(l.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Service, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (l liveServices) Services(namespace string) corelisters.ServiceNamespaceLister {
	return liveServices{l.client, namespace}
}

func (l liveServices) Get(name string) (*corev1.Service, error) {
	return l.client.CoreV1().Services(l.namespace).Get(context.Background(), name, metav1.GetOptions{})
}

// liveSlices reads the EndpointSlices of a Service from the cluster.
type liveSlices struct{ client kubernetes.Interface }

func (l liveSlices) GetEndpointSlices(namespace, service string) ([]*discoveryv1.EndpointSlice, error) {
	list, err := l.client.DiscoveryV1().EndpointSlices(namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
