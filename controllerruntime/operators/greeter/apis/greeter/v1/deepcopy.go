package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The deep copies deepcopy-gen would write, written by hand.

// DeepCopyInto copies in into out.
func (in *Greeter) DeepCopyInto(out *Greeter) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of in.
func (in *Greeter) DeepCopy() *Greeter {
	if in == nil {
		return nil
	}
	out := new(Greeter)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *Greeter) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopyInto copies in into out.
func (in *GreeterSpec) DeepCopyInto(out *GreeterSpec) {
	*out = *in
	if in.Replicas != nil {
		r := *in.Replicas
		out.Replicas = &r
	}
}

// DeepCopyInto copies in into out.
func (in *GreeterStatus) DeepCopyInto(out *GreeterStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies in into out.
func (in *GreeterList) DeepCopyInto(out *GreeterList) {
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Greeter, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of in.
func (in *GreeterList) DeepCopy() *GreeterList {
	if in == nil {
		return nil
	}
	out := new(GreeterList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *GreeterList) DeepCopyObject() runtime.Object { return in.DeepCopy() }
