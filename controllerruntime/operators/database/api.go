package database

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of Database.
var GroupVersion = schema.GroupVersion{Group: "ops.ctrlkit.dev", Version: "v1"}

// AddToScheme registers Database and DatabaseList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Database{}, &DatabaseList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Database is a replicated database: a StatefulSet of Replicas pods of
// Image, a volume for its backups of Storage, and a migration Job per
// image.
type Database struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DatabaseSpec   `json:"spec,omitempty"`
	Status DatabaseStatus `json:"status,omitempty"`
}

// DatabaseSpec is what a Database asks for.
type DatabaseSpec struct {
	// Image is the database server's container image; its migration Job
	// runs the same image.
	Image string `json:"image"`
	// Replicas is the number of pods; nil means 1.
	Replicas *int32 `json:"replicas,omitempty"`
	// Storage is the size of the backup volume; "" means 1Gi.
	Storage string `json:"storage,omitempty"`
}

// DatabaseStatus is what the operator last saw.
type DatabaseStatus struct {
	// Conditions: Ready says whether every replica of the current spec is
	// ready and the image's migration has completed.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ReadyReplicas is the StatefulSet's count of ready pods.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// MigrationJob is the name of the current image's migration Job.
	MigrationJob string `json:"migrationJob,omitempty"`
	// ObservedGeneration is the generation of the spec the operator last
	// acted on.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DatabaseList is a list of Databases.
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Database `json:"items"`
}

// DeepCopyInto copies d into out.
func (d *Database) DeepCopyInto(out *Database) {
	*out = *d
	d.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if d.Spec.Replicas != nil {
		r := *d.Spec.Replicas
		out.Spec.Replicas = &r
	}
	if d.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(d.Status.Conditions))
		for i := range d.Status.Conditions {
			d.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
}

// DeepCopy returns a copy of d.
func (d *Database) DeepCopy() *Database {
	if d == nil {
		return nil
	}
	out := new(Database)
	d.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (d *Database) DeepCopyObject() runtime.Object { return d.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *DatabaseList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &DatabaseList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Database, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
