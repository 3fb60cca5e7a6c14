package memcluster

import (
	"maps"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// discovery.k8s.io/v1 EndpointSlices. No EndpointSlice controller runs:
// Services get none.

// endpointSliceGeneration is what bumps an EndpointSlice's generation:
// anything but its metadata, and its labels.
type endpointSliceGeneration struct {
	AddressType discoveryv1.AddressType
	Endpoints   []discoveryv1.Endpoint
	Ports       []discoveryv1.EndpointPort
	Labels      map[string]string
}

func endpointSliceKind() Kind[*discoveryv1.EndpointSlice] {
	k := builtinKindOf(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), "endpointslices",
		func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} }, func() runtime.Object { return &discoveryv1.EndpointSliceList{} })
	k.Default = defaults.EndpointSlice
	k.Generation = func(es *discoveryv1.EndpointSlice) any {
		return endpointSliceGeneration{es.AddressType, es.Endpoints, es.Ports, maps.Clone(es.Labels)}
	}
	k.Validate = func(es, old *discoveryv1.EndpointSlice) field.ErrorList {
		at := field.NewPath("addressType")
		var errs field.ErrorList
		switch es.AddressType {
		case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
		case "":
			errs = append(errs, field.Required(at, ""))
		default:
			errs = append(errs, field.NotSupported(at, es.AddressType,
				[]string{string(discoveryv1.AddressTypeFQDN), string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6)}))
		}
		if old != nil {
			errs = append(errs, immutable(es.AddressType, old.AddressType, at)...)
		}
		return errs
	}
	return k
}
