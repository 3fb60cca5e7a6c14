package memcluster

import (
	"fmt"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Field selectors are answered as kube-apiserver answers them: each served
// version of a kind accepts the field labels of its field-label conversion
// (anything else is a 400 with that conversion's message), and an object
// matches on the fields its registry's GetAttrs returns. The table below
// holds kube-apiserver v1.37's built-in kinds that accept more than
// metadata.name and metadata.namespace; a kind added with [NewResource]
// finds its entry by group, version and kind, so the kinds of k8s.io/api
// get theirs wherever they are registered. Kinds outside the table answer
// as kube-apiserver does for the rest of its built-in kinds
// (metadata.name and metadata.namespace, any other label is `"x" is not a
// known field selector: only "metadata.name", "metadata.namespace"`) or,
// for groups that are not kube-apiserver's, as for custom resources
// (metadata.name, metadata.namespace if namespaced, `field label not
// supported: x`). [Kind.SelectableFields] overrides both.

// fieldSelection answers field selectors for one kind.
type fieldSelection[T Object] struct {
	// convert is the kind's field-label conversion: the label an object's
	// fields use, or the error kube-apiserver answers.
	convert fields.TransformFunc
	// fields returns the fields of obj selectors match.
	fields func(obj T) fields.Set
}

// selector parses a field selector and converts its labels.
func (fs fieldSelection[T]) selector(s string) (fields.Selector, error) {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector %q: %v", s, err))
	}
	if sel.Empty() {
		return sel, nil
	}
	sel, err = sel.Transform(fs.convert)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return sel, nil
}

// builtinFields is a table entry: the labels the version's conversion
// accepts (and those it renames), its error, and the fields of an object.
type builtinFields struct {
	labels  []string
	renames map[string]string
	errf    func(label string) error
	fields  func(obj Object) fields.Set
}

func (b builtinFields) convert(label, value string) (string, string, error) {
	if to, ok := b.renames[label]; ok {
		return to, value, nil
	}
	if slices.Contains(b.labels, label) {
		return label, value, nil
	}
	return "", "", b.errf(label)
}

func labelNotSupported(label string) error { return fmt.Errorf("field label not supported: %s", label) }

// metaFields is generic.ObjectMetaFieldsSet.
func metaFields(obj metav1.Object, namespaced bool) fields.Set {
	if !namespaced {
		return fields.Set{"metadata.name": obj.GetName()}
	}
	return fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
}

// withMeta adds the metadata fields to set.
func withMeta(set fields.Set, obj metav1.Object, namespaced bool) fields.Set {
	for k, v := range metaFields(obj, namespaced) {
		set[k] = v
	}
	return set
}

// selectableFields is the table of kube-apiserver v1.37's kinds with
// field selectors beyond metadata's, from their field-label conversions
// and their registries' GetAttrs.
var selectableFields = map[schema.GroupVersionKind]builtinFields{
	corev1.SchemeGroupVersion.WithKind("Pod"): {
		labels: []string{"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
			"spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName"},
		renames: map[string]string{"spec.host": "spec.nodeName"},
		errf:    labelNotSupported,
		fields: func(obj Object) fields.Set {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return metaFields(obj, true)
			}
			ip := ""
			if len(p.Status.PodIPs) > 0 {
				ip = p.Status.PodIPs[0].IP
			}
			return withMeta(fields.Set{
				"spec.nodeName":            p.Spec.NodeName,
				"spec.restartPolicy":       string(p.Spec.RestartPolicy),
				"spec.schedulerName":       p.Spec.SchedulerName,
				"spec.serviceAccountName":  p.Spec.ServiceAccountName,
				"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
				"status.phase":             string(p.Status.Phase),
				"status.podIP":             ip,
				"status.nominatedNodeName": p.Status.NominatedNodeName,
			}, p, true)
		},
	},
	corev1.SchemeGroupVersion.WithKind("Node"): {
		labels: []string{"metadata.name", "spec.unschedulable"},
		errf:   labelNotSupported,
		fields: func(obj Object) fields.Set {
			n, ok := obj.(*corev1.Node)
			if !ok {
				return metaFields(obj, false)
			}
			return withMeta(fields.Set{"spec.unschedulable": strconv.FormatBool(n.Spec.Unschedulable)}, n, false)
		},
	},
	corev1.SchemeGroupVersion.WithKind("ReplicationController"): {
		labels: []string{"metadata.name", "metadata.namespace", "status.replicas"},
		errf:   labelNotSupported,
		fields: func(obj Object) fields.Set {
			rc, ok := obj.(*corev1.ReplicationController)
			if !ok {
				return metaFields(obj, true)
			}
			return withMeta(fields.Set{"status.replicas": strconv.Itoa(int(rc.Status.Replicas))}, rc, true)
		},
	},
	corev1.SchemeGroupVersion.WithKind("Event"): {
		labels: []string{"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
			"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
			"reason", "reportingComponent", "source", "type", "metadata.namespace", "metadata.name"},
		errf: labelNotSupported,
		fields: func(obj Object) fields.Set {
			e, ok := obj.(*corev1.Event)
			if !ok {
				return metaFields(obj, true)
			}
			return eventFields(e, e.InvolvedObject, e.Reason, e.ReportingController, e.Source.Component, e.Type)
		},
	},
	eventsv1.SchemeGroupVersion.WithKind("Event"): {
		labels: []string{"reason", "type", "metadata.namespace", "metadata.name"},
		renames: map[string]string{
			"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
			"regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
			"regarding.apiVersion": "involvedObject.apiVersion", "regarding.resourceVersion": "involvedObject.resourceVersion",
			"regarding.fieldPath": "involvedObject.fieldPath", "reportingController": "reportingComponent",
		},
		errf: labelNotSupported,
		fields: func(obj Object) fields.Set {
			e, ok := obj.(*eventsv1.Event)
			if !ok {
				return metaFields(obj, true)
			}
			return eventFields(e, e.Regarding, e.Reason, e.ReportingController, e.DeprecatedSource.Component, e.Type)
		},
	},
	corev1.SchemeGroupVersion.WithKind("Namespace"): {
		labels: []string{"status.phase", "metadata.name"},
		errf:   labelNotSupported,
		fields: func(obj Object) fields.Set {
			n, ok := obj.(*corev1.Namespace)
			if !ok {
				return metaFields(obj, false)
			}
			return withMeta(fields.Set{"status.phase": string(n.Status.Phase), "name": n.Name}, n, false)
		},
	},
	corev1.SchemeGroupVersion.WithKind("Secret"): {
		labels: []string{"type", "metadata.namespace", "metadata.name"},
		errf:   labelNotSupported,
		fields: func(obj Object) fields.Set {
			s, ok := obj.(*corev1.Secret)
			if !ok {
				return metaFields(obj, true)
			}
			return withMeta(fields.Set{"type": string(s.Type)}, s, true)
		},
	},
	corev1.SchemeGroupVersion.WithKind("Service"): {
		labels: []string{"metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"},
		errf:   labelNotSupported,
		fields: func(obj Object) fields.Set {
			s, ok := obj.(*corev1.Service)
			if !ok {
				return metaFields(obj, true)
			}
			return withMeta(fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}, s, true)
		},
	},
	batchv1.SchemeGroupVersion.WithKind("Job"): {
		labels: []string{"metadata.name", "metadata.namespace", "status.successful"},
		errf:   func(label string) error { return fmt.Errorf("field label %q not supported for Job", label) },
		fields: func(obj Object) fields.Set {
			j, ok := obj.(*batchv1.Job)
			if !ok {
				return metaFields(obj, true)
			}
			return withMeta(fields.Set{"status.successful": strconv.Itoa(int(j.Status.Succeeded))}, j, true)
		},
	},
	certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"): {
		labels: []string{"metadata.name", "spec.signerName"},
		errf:   labelNotSupported,
		fields: func(obj Object) fields.Set {
			csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
			if !ok {
				return metaFields(obj, false)
			}
			return withMeta(fields.Set{"spec.signerName": csr.Spec.SignerName}, csr, false)
		},
	},
}

// eventFields are the event registry's fields, for both Event versions.
func eventFields(e metav1.Object, ref corev1.ObjectReference, reason, reporting, source, typ string) fields.Set {
	if source == "" {
		source = reporting
	}
	return withMeta(fields.Set{
		"involvedObject.kind":            ref.Kind,
		"involvedObject.namespace":       ref.Namespace,
		"involvedObject.name":            ref.Name,
		"involvedObject.uid":             string(ref.UID),
		"involvedObject.apiVersion":      ref.APIVersion,
		"involvedObject.resourceVersion": ref.ResourceVersion,
		"involvedObject.fieldPath":       ref.FieldPath,
		"reason":                         reason,
		"reportingComponent":             reporting,
		"source":                         source,
		"type":                           typ,
	}, e, true)
}

// builtinGroups are kube-apiserver's own API groups: their kinds without
// a conversion of their own answer field selectors with the default one.
var builtinGroups = map[string]bool{
	"": true, "apps": true, "batch": true, "autoscaling": true, "policy": true, "extensions": true,
	"admissionregistration.k8s.io": true, "apiextensions.k8s.io": true, "apiregistration.k8s.io": true,
	"authentication.k8s.io": true, "authorization.k8s.io": true, "certificates.k8s.io": true,
	"coordination.k8s.io": true, "discovery.k8s.io": true, "events.k8s.io": true,
	"flowcontrol.apiserver.k8s.io": true, "internal.apiserver.k8s.io": true, "networking.k8s.io": true,
	"node.k8s.io": true, "rbac.authorization.k8s.io": true, "resource.k8s.io": true,
	"scheduling.k8s.io": true, "storage.k8s.io": true, "storagemigration.k8s.io": true,
}

func newFieldSelection[T Object](k Kind[T]) fieldSelection[T] {
	namespaced := !k.ClusterScoped
	if k.SelectableFields != nil {
		known := k.SelectableFields(k.New())
		return fieldSelection[T]{
			convert: func(label, value string) (string, string, error) {
				if known.Has(label) {
					return label, value, nil
				}
				return "", "", labelNotSupported(label)
			},
			fields: k.SelectableFields,
		}
	}
	if b, ok := selectableFields[k.GVK]; ok {
		return fieldSelection[T]{convert: b.convert, fields: func(obj T) fields.Set { return b.fields(obj) }}
	}
	meta := func(obj T) fields.Set { return metaFields(obj, namespaced) }
	if builtinGroups[k.GVK.Group] {
		return fieldSelection[T]{
			convert: func(label, value string) (string, string, error) {
				if label == "metadata.name" || label == "metadata.namespace" {
					return label, value, nil
				}
				return "", "", fmt.Errorf("%q is not a known field selector: only %q, %q", label, "metadata.name", "metadata.namespace")
			},
			fields: meta,
		}
	}
	return fieldSelection[T]{
		convert: func(label, value string) (string, string, error) {
			if label == "metadata.name" || namespaced && label == "metadata.namespace" {
				return label, value, nil
			}
			return "", "", labelNotSupported(label)
		},
		fields: meta,
	}
}
