package memcluster

import (
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// The core/v1 kinds of AddBuiltinKinds (those of addCoreKinds are in
// corekinds.go).

func pvcKind() Kind[*corev1.PersistentVolumeClaim] {
	k := builtinKindOf(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), "persistentvolumeclaims",
		func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} },
		func() runtime.Object { return &corev1.PersistentVolumeClaimList{} })
	k.ShortNames = []string{"pvc"}
	k.Default = defaults.PersistentVolumeClaim
	k.Validate = validatePVC
	withStatus(&k, func(p *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaimStatus { return &p.Status }, false,
		func(next, _ *corev1.PersistentVolumeClaim) { defaults.PersistentVolumeClaim(next) })
	return k
}

var accessModes = []string{string(corev1.ReadOnlyMany), string(corev1.ReadWriteMany), string(corev1.ReadWriteOnce), string(corev1.ReadWriteOncePod)}

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, path *field.Path, required string) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(path, required))
	}
	once, other := false, false
	for _, m := range modes {
		switch {
		case !slices.Contains(accessModes, string(m)):
			errs = append(errs, field.NotSupported(path, m, accessModes))
		case m == corev1.ReadWriteOncePod:
			once = true
		default:
			other = true
		}
	}
	if once && other {
		errs = append(errs, field.Forbidden(path, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

// validateClaimSpec is what every PersistentVolumeClaim spec must be.
func validateClaimSpec(s *corev1.PersistentVolumeClaimSpec, path *field.Path) field.ErrorList {
	errs := validateAccessModes(s.AccessModes, path.Child("accessModes"), "at least 1 access mode is required")
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
	}
	storage := path.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storage, ""))
	} else {
		errs = append(errs, positiveQuantity(q, storage)...)
	}
	return errs
}

func positiveQuantity(q resource.Quantity, path *field.Path) field.ErrorList {
	if q.Sign() <= 0 {
		return field.ErrorList{field.Invalid(path, q.String(), "must be greater than zero")}
	}
	return nil
}

func validatePVC(p, old *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateClaimSpec(&p.Spec, field.NewPath("spec"))
	if old == nil {
		return errs
	}
	// The spec may not change but for the volume name (once), and for a
	// bound claim its requested storage and volume attributes class.
	next, prev := p.Spec.DeepCopy(), old.Spec.DeepCopy()
	if prev.VolumeName == "" {
		prev.VolumeName = next.VolumeName
	}
	if prev.StorageClassName == nil && old.Annotations[corev1.BetaStorageClassAnnotation] == "" {
		prev.StorageClassName = next.StorageClassName // a class may be set once, retroactively
	}
	if p.Status.Phase == corev1.ClaimBound {
		if next.Resources.Requests != nil {
			next.Resources.Requests[corev1.ResourceStorage] = old.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		next.VolumeAttributesClassName = prev.VolumeAttributesClassName
	}
	if !apiequality.Semantic.DeepEqual(next, prev) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
	}
	oldSize, newSize := old.Spec.Resources.Requests[corev1.ResourceStorage], p.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 && newSize.Cmp(old.Status.Capacity[corev1.ResourceStorage]) <= 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	return errs
}

func pvKind(c *Cluster) Kind[*corev1.PersistentVolume] {
	k := builtinKindOf(corev1.SchemeGroupVersion.WithKind("PersistentVolume"), "persistentvolumes",
		func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} }, func() runtime.Object { return &corev1.PersistentVolumeList{} })
	k.ClusterScoped = true
	k.ShortNames = []string{"pv"}
	k.Default = defaults.PersistentVolume
	k.Validate = validatePV
	// A new volume is Pending since now; a status write that changes the
	// phase without saying when gets now as its transition time.
	k.PrepareCreate = func(pv *corev1.PersistentVolume) {
		now := c.now()
		pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &now}
	}
	withStatus(&k, func(pv *corev1.PersistentVolume) *corev1.PersistentVolumeStatus { return &pv.Status }, false,
		func(pv, oldPV *corev1.PersistentVolume) {
			defaults.PersistentVolume(pv)
			next, old := &pv.Status, &oldPV.Status
			switch {
			case next.Phase == old.Phase && next.LastPhaseTransitionTime == nil:
				next.LastPhaseTransitionTime = old.LastPhaseTransitionTime
			case next.Phase != old.Phase && (next.LastPhaseTransitionTime == nil || next.LastPhaseTransitionTime.Equal(old.LastPhaseTransitionTime)):
				now := c.now()
				next.LastPhaseTransitionTime = &now
			}
		})
	return k
}

// pvSources are the json names of the volume sources of a
// PersistentVolume, in field order.
var pvSources = func() []string {
	var names []string
	t := reflect.TypeFor[corev1.PersistentVolumeSource]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}()

func validatePV(pv, old *corev1.PersistentVolume) field.ErrorList {
	spec := field.NewPath("spec")
	s := &pv.Spec
	errs := validateAccessModes(s.AccessModes, spec.Child("accessModes"), "")
	if len(s.Capacity) == 0 {
		errs = append(errs, field.Required(spec.Child("capacity"), ""))
	}
	if _, ok := s.Capacity[corev1.ResourceStorage]; !ok || len(s.Capacity) > 1 {
		errs = append(errs, field.NotSupported(spec.Child("capacity"), s.Capacity, []string{string(corev1.ResourceStorage)}))
	}
	for name, q := range s.Capacity {
		errs = append(errs, positiveQuantity(q, spec.Child("capacity").Key(string(name)))...)
	}
	switch p := s.PersistentVolumeReclaimPolicy; p {
	case corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain:
	default:
		errs = append(errs, field.NotSupported(spec.Child("persistentVolumeReclaimPolicy"), p, []string{
			string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRecycle), string(corev1.PersistentVolumeReclaimRetain)}))
	}
	n := 0
	v := reflect.ValueOf(s.PersistentVolumeSource)
	for i, name := range pvSources {
		if v.Field(i).IsNil() {
			continue
		}
		if n++; n > 1 {
			errs = append(errs, field.Forbidden(spec.Child(name), "may not specify more than 1 volume type"))
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(spec, "must specify a volume type"))
	}
	if old != nil {
		if !apiequality.Semantic.DeepEqual(s.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
			errs = append(errs, field.Forbidden(spec.Child("persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
		}
		errs = append(errs, immutable(s.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	}
	return errs
}

func endpointsKind() Kind[*corev1.Endpoints] {
	k := builtinKindOf(corev1.SchemeGroupVersion.WithKind("Endpoints"), "endpoints",
		func() *corev1.Endpoints { return &corev1.Endpoints{} }, func() runtime.Object { return &corev1.EndpointsList{} })
	k.ShortNames = []string{"ep"}
	k.Default = defaults.Endpoints
	return k
}

func nodeKind() Kind[*corev1.Node] {
	k := builtinKindOf(corev1.SchemeGroupVersion.WithKind("Node"), "nodes",
		func() *corev1.Node { return &corev1.Node{} }, func() runtime.Object { return &corev1.NodeList{} })
	k.ClusterScoped = true
	k.ShortNames = []string{"no"}
	k.Default = func(n *corev1.Node) {
		defaults.Node(n)
		// kube-apiserver's conversion keeps podCIDR and podCIDRs in step
		// (podCIDR wins).
		s := &n.Spec
		switch {
		case s.PodCIDR != "" && (len(s.PodCIDRs) == 0 || s.PodCIDRs[0] != s.PodCIDR):
			s.PodCIDRs = []string{s.PodCIDR}
		case s.PodCIDR == "" && len(s.PodCIDRs) > 0:
			s.PodCIDR = s.PodCIDRs[0]
		}
	}
	// A node is created with its status (the kubelet registers it so).
	withStatus(&k, func(n *corev1.Node) *corev1.NodeStatus { return &n.Status }, true,
		func(next, _ *corev1.Node) { defaults.Node(next) })
	return k
}

func replicationControllerKind() Kind[*corev1.ReplicationController] {
	k := builtinKindOf(corev1.SchemeGroupVersion.WithKind("ReplicationController"), "replicationcontrollers",
		func() *corev1.ReplicationController { return &corev1.ReplicationController{} },
		func() runtime.Object { return &corev1.ReplicationControllerList{} })
	k.ShortNames, k.Categories = []string{"rc"}, []string{"all"}
	k.Default = defaults.ReplicationController
	k.Validate = func(rc, _ *corev1.ReplicationController) field.ErrorList {
		spec := field.NewPath("spec")
		s := &rc.Spec
		errs := nonNegative(int64(s.MinReadySeconds), spec.Child("minReadySeconds"))
		if labels.Set(s.Selector).AsSelector().Empty() {
			errs = append(errs, field.Required(spec.Child("selector"), ""))
		}
		errs = append(errs, nonNegative(int64(*s.Replicas), spec.Child("replicas"))...)
		tp := spec.Child("template")
		if s.Template == nil {
			return append(errs, field.Required(tp, ""))
		}
		if sel := labels.Set(s.Selector).AsSelector(); !sel.Empty() && !sel.Matches(labels.Set(s.Template.Labels)) {
			errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
		}
		errs = append(errs, validatePodTemplate(s.Template, tp)...)
		if s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), s.Template.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
		}
		if s.Template.Spec.ActiveDeadlineSeconds != nil {
			errs = append(errs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicationController is not Supported"))
		}
		return errs
	}
	specGeneration(&k, func(rc *corev1.ReplicationController) *corev1.ReplicationControllerSpec { return &rc.Spec })
	withStatus(&k, func(rc *corev1.ReplicationController) *corev1.ReplicationControllerStatus { return &rc.Status }, false, nil)
	return k
}

// validatePodTemplate validates a pod template's labels and spec.
func validatePodTemplate(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, path.Child("metadata", "labels"))
	return append(errs, validatePodSpec(&t.Spec, path.Child("spec"))...)
}

// labelSelectorFor is the selector of a map of labels, for scale.
func labelSelectorFor(m map[string]string) *metav1.LabelSelector {
	if len(m) == 0 {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: m}
}
