package memcluster

import (
	"encoding/json"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// addCoreKinds adds the kinds operators commonly touch besides
// Deployments, ReplicaSets, Pods and Namespaces (which every cluster
// stores): Services, ConfigMaps, Secrets, ServiceAccounts, core/v1 and
// events.k8s.io/v1 Events, coordination.k8s.io/v1 Leases and policy/v1
// PodDisruptionBudgets. [AddBuiltinKinds] adds them and more. Kinds the
// cluster already has are kept, so it may be called twice.
//
// They have the generic semantics of [KindFor] with what kube-apiserver
// adds that a controller can observe:
//
//   - Services: the API defaults (package defaults: type ClusterIP,
//     sessionAffinity None, port protocol TCP and targetPort equal to the
//     port, …); a clusterIP (from 10.96.0.0/12, in creation order) and
//     node ports (from 30000) are allocated, kept by updates that leave
//     them empty, and immutable; ports are validated.
//   - Secrets: type Opaque by default; stringData is merged into data;
//     the type is immutable, and so are the data of an immutable Secret
//     (and ConfigMap); keys are validated, and the keys each type needs.
//   - PodDisruptionBudgets: kube-apiserver's validation, and their status
//     as the disruption controller computes it (see [Cluster.Evict]).
//
// Differences: core/v1 and events.k8s.io/v1 Events are two stores
// (kube-apiserver serves one store in both versions).
func addCoreKinds(c *Cluster) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, eventsv1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("memcluster: %v", err)) // static registrations
		}
	}
	addKind(c, pdbKind()) // Namespaces are built in: see New

	svc := coreKind(s, &corev1.Service{}, KindOptions{})
	alloc := &serviceAllocator{}
	svc.ShortNames, svc.Categories = []string{"svc"}, []string{"all"}
	svc.validName = apivalidation.NameIsDNSLabel
	svc.Default = defaults.Service
	svc.Validate = validateService
	svc.PrepareCreate = func(sv *corev1.Service) {
		sv.Status = corev1.ServiceStatus{}
		alloc.allocate(sv)
	}
	svc.PrepareUpdate = keepServiceAllocations
	withStatus(&svc, func(sv *corev1.Service) *corev1.ServiceStatus { return &sv.Status }, false,
		func(next, _ *corev1.Service) { defaults.Service(next) })
	addKind(c, svc)

	secret := coreKind(s, &corev1.Secret{}, KindOptions{})
	secret.Default = func(sec *corev1.Secret) {
		// kube-apiserver's conversion merges stringData into data.
		if len(sec.StringData) > 0 && sec.Data == nil {
			sec.Data = make(map[string][]byte, len(sec.StringData))
		}
		for k, v := range sec.StringData {
			sec.Data[k] = []byte(v)
		}
		sec.StringData = nil
		defaults.Secret(sec)
	}
	secret.Validate = validateSecret
	addKind(c, secret)

	cm := coreKind(s, &corev1.ConfigMap{}, KindOptions{})
	cm.ShortNames = []string{"cm"}
	cm.Default = defaults.ConfigMap
	cm.Validate = validateConfigMap
	addKind(c, cm)
	sa := coreKind(s, &corev1.ServiceAccount{}, KindOptions{})
	sa.ShortNames = []string{"sa"}
	// Only the names of the secrets an account lists are kept.
	sa.PrepareCreate = cleanSecretReferences
	sa.PrepareUpdate = func(a, _ *corev1.ServiceAccount) field.ErrorList { cleanSecretReferences(a); return nil }
	addKind(c, sa)
	ev := coreKind(s, &corev1.Event{}, KindOptions{})
	ev.ShortNames = []string{"ev"}
	ev.Validate = validateEvent
	ev.validName = func(string, bool) []string { return nil } // core/v1 Events' names are not validated
	addKind(c, ev)
	evs := coreKind(s, &eventsv1.Event{}, KindOptions{})
	evs.ShortNames = []string{"ev"}
	addKind(c, evs)
	addKind(c, coreKind(s, &coordinationv1.Lease{}, KindOptions{}))
}

// coreKind is KindFor for a type of s that does not track generations:
// its generation is the one it was created with (usually none).
func coreKind[T Object](s *runtime.Scheme, example T, o KindOptions) Kind[T] {
	k, err := KindFor(s, example, o)
	if err != nil {
		panic(err) // static registrations
	}
	k.Generation = nil
	return k
}

// serviceAllocator hands out cluster IPs and node ports in creation order.
// Its hook runs under the cluster's lock, like every Kind hook.
type serviceAllocator struct{ ip, port int }

func (a *serviceAllocator) allocate(sv *corev1.Service) {
	s := &sv.Spec
	if s.Type != corev1.ServiceTypeExternalName && s.ClusterIP == "" {
		a.ip++ // 10.96.0.1 is the kubernetes service's, on a real cluster
		n := a.ip + 1
		s.ClusterIP = fmt.Sprintf("10.%d.%d.%d", 96+n>>16&0x0f, n>>8&0xff, n&0xff)
	}
	if s.ClusterIP != "" && len(s.ClusterIPs) == 0 {
		s.ClusterIPs = []string{s.ClusterIP}
	}
	if s.Type != corev1.ServiceTypeExternalName {
		if len(s.IPFamilies) == 0 {
			s.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
		if s.IPFamilyPolicy == nil {
			s.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicySingleStack)
		}
	}
	if s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer {
		for i := range s.Ports {
			if s.Ports[i].NodePort == 0 {
				s.Ports[i].NodePort = int32(30000 + a.port%2768)
				a.port++
			}
		}
	}
}

// keepServiceAllocations keeps what the server allocated when an update
// leaves it empty, and refuses to change the cluster IP.
func keepServiceAllocations(sv, old *corev1.Service) field.ErrorList {
	s, o := &sv.Spec, &old.Spec
	if s.ClusterIP == "" {
		s.ClusterIP, s.ClusterIPs = o.ClusterIP, o.ClusterIPs
	}
	if len(s.ClusterIPs) == 0 {
		s.ClusterIPs = o.ClusterIPs
	}
	if len(s.IPFamilies) == 0 {
		s.IPFamilies = o.IPFamilies
	}
	if s.IPFamilyPolicy == nil {
		s.IPFamilyPolicy = o.IPFamilyPolicy
	}
	for i := range s.Ports {
		for _, op := range o.Ports {
			if s.Ports[i].NodePort == 0 && op.Port == s.Ports[i].Port && protocol(op.Protocol) == protocol(s.Ports[i].Protocol) {
				s.Ports[i].NodePort = op.NodePort
			}
		}
	}
	if s.ClusterIP != o.ClusterIP && o.ClusterIP != "" {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), s.ClusterIP, "may not change once set")}
	}
	return nil
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func cleanSecretReferences(a *corev1.ServiceAccount) {
	for i, ref := range a.Secrets {
		a.Secrets[i] = corev1.ObjectReference{Name: ref.Name}
	}
}

func validateService(sv, _ *corev1.Service) field.ErrorList {
	spec := field.NewPath("spec")
	s := &sv.Spec
	headless := len(s.ClusterIPs) > 0 && s.ClusterIPs[0] == corev1.ClusterIPNone || s.ClusterIP == corev1.ClusterIPNone
	var errs field.ErrorList
	if len(s.Ports) == 0 && !headless && s.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(spec.Child("ports"), ""))
	}
	switch s.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	case corev1.ServiceTypeExternalName:
		cname := strings.TrimSuffix(s.ExternalName, ".")
		if cname == "" {
			errs = append(errs, field.Required(spec.Child("externalName"), ""))
		}
		for _, msg := range validation.IsDNS1123Subdomain(cname) {
			if cname != "" {
				errs = append(errs, field.Invalid(spec.Child("externalName"), cname, msg))
			}
		}
	default:
		errs = append(errs, field.NotSupported(spec.Child("type"), s.Type, []string{
			string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeExternalName), string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort)}))
	}
	names := map[string]bool{}
	for i, p := range s.Ports {
		pp := spec.Child("ports").Index(i)
		if len(s.Ports) > 1 && p.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), ""))
		} else if p.Name != "" {
			for _, msg := range validation.IsDNS1123Label(p.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
			}
			if names[p.Name] {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		for _, msg := range validation.IsValidPortNum(int(p.Port)) {
			errs = append(errs, field.Invalid(pp.Child("port"), p.Port, msg))
		}
		switch p.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol,
				[]string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}))
		}
	}
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(s.Selector, spec.Child("selector"))...)
	}
	return errs
}

func validateSecret(sec, old *corev1.Secret) field.ErrorList {
	data := field.NewPath("data")
	errs := dataKeys(data, sec.Data)
	if old != nil {
		errs = append(errs, immutable(sec.Type, old.Type, field.NewPath("type"))...)
		errs = append(errs, immutableData(old.Immutable, sec.Immutable, []dataField{{"data", sec.Data, old.Data}})...)
	}
	need := func(keys ...string) {
		for _, k := range keys {
			if _, ok := sec.Data[k]; !ok {
				errs = append(errs, field.Required(data.Key(k), ""))
			}
		}
	}
	switch sec.Type {
	case corev1.SecretTypeServiceAccountToken:
		if sec.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg, corev1.SecretTypeDockerConfigJson:
		key := corev1.DockerConfigKey
		if sec.Type == corev1.SecretTypeDockerConfigJson {
			key = corev1.DockerConfigJsonKey
		}
		if b, ok := sec.Data[key]; !ok {
			need(key)
		} else if err := json.Unmarshal(b, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(data.Key(key), "<secret contents redacted>", err.Error()))
		}
	case corev1.SecretTypeBasicAuth:
		_, u := sec.Data[corev1.BasicAuthUsernameKey]
		_, p := sec.Data[corev1.BasicAuthPasswordKey]
		if !u && !p {
			need(corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(sec.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(data.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		need(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	return errs
}

func validateConfigMap(cm, old *corev1.ConfigMap) field.ErrorList {
	errs := dataKeys(field.NewPath("binaryData"), cm.BinaryData)
	for key := range cm.Data {
		p := field.NewPath("data").Key(key)
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(p, key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(p, key, "duplicate of key present in binaryData"))
		}
	}
	if old != nil {
		errs = append(errs, immutableData(old.Immutable, cm.Immutable, []dataField{
			{"data", cm.Data, old.Data}, {"binaryData", cm.BinaryData, old.BinaryData}})...)
	}
	return errs
}

func dataKeys[V any](path *field.Path, data map[string]V) field.ErrorList {
	var errs field.ErrorList
	for key := range data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(path.Key(key), key, msg))
		}
	}
	return errs
}

type dataField struct {
	name     string
	new, old any
}

// immutableData refuses, once immutable is set, to unset it or change the
// data, as for Secrets and ConfigMaps.
func immutableData(was, is *bool, fields []dataField) field.ErrorList {
	if was == nil || !*was {
		return nil
	}
	const msg = "field is immutable when `immutable` is set"
	var errs field.ErrorList
	if is == nil || !*is {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
	}
	for _, f := range fields {
		if !semanticEqual(f.new, f.old) {
			errs = append(errs, field.Forbidden(field.NewPath(f.name), msg))
		}
	}
	return errs
}

// validateEvent is the validation of core/v1 Events: that of the object
// they are about agrees with their namespace.
func validateEvent(e, _ *corev1.Event) field.ErrorList {
	p := field.NewPath("involvedObject", "namespace")
	ns := e.InvolvedObject.Namespace
	switch {
	case e.EventTime.IsZero() && ns == "" && e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault,
		e.EventTime.IsZero() && ns != "" && e.Namespace != ns,
		!e.EventTime.IsZero() && ns == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem:
		return field.ErrorList{field.Invalid(p, ns, "does not match event.namespace")}
	}
	return nil
}
