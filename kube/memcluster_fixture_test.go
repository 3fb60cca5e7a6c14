package kube_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/ctrlkit/ctrlkit/memcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Widget is a custom resource type, as kubebuilder would generate it.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec,omitempty"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	Size int `json:"size,omitempty"`
}

type WidgetStatus struct {
	Ready bool `json:"ready,omitempty"`
}

type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]Widget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Widget)
	}
	return &out
}

var widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// recorder is an http.Handler that records the requests it passes on.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	method, path, query, contentType string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, recorded{req.Method, req.URL.Path, req.URL.RawQuery, req.Header.Get("Content-Type")})
	r.mu.Unlock()
	r.next.ServeHTTP(w, req)
}

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// newMemcluster returns a cluster with the core kinds and widgets, a
// rest.Config that serves it in-process, and the recorder of its requests.
func newMemcluster(t *testing.T, cfg memcluster.Config) (*memcluster.Cluster, *rest.Config, *recorder) {
	t.Helper()
	c := memcluster.New(cfg)
	memcluster.AddBuiltinKinds(c)
	s := runtime.NewScheme()
	gv := widgetGVR.GroupVersion()
	s.AddKnownTypes(gv, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, gv)
	k, err := memcluster.KindFor(s, &Widget{}, memcluster.KindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	memcluster.NewResource(c, k)
	rec := &recorder{next: memcluster.NewHandler(c)}
	return c, &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: rec}}, rec
}
