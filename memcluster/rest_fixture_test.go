package memcluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// widget is a custom resource type, as kubebuilder would generate it.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec   `json:"spec,omitempty"`
	Status            widgetStatus `json:"status,omitempty"`
}

type widgetSpec struct {
	Size  int      `json:"size,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Owner string   `json:"owner,omitempty"`
}

type widgetStatus struct {
	Ready bool `json:"ready,omitempty"`
}

type widgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widget `json:"items"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Tags = append([]string(nil), w.Spec.Tags...)
	return &out
}

func (l *widgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]widget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*widget)
	}
	return &out
}

var widgetGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

func widgetScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(widgetGV.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(widgetGV.WithKind("WidgetList"), &widgetList{})
	metav1.AddToGroupVersion(s, widgetGV)
	return s
}

// addWidgets adds the widget kind to c.
func addWidgets(t *testing.T, c *Cluster) *Resource[*widget] {
	t.Helper()
	k, err := KindFor(widgetScheme(t), &widget{}, KindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return NewResource(c, k)
}

// restClient sends requests to a Handler through a Transport.
type restClient struct {
	t  *testing.T
	hc *http.Client
}

func newRESTClient(t *testing.T, c *Cluster) restClient {
	return restClient{t: t, hc: &http.Client{Transport: Transport{Handler: NewHandler(c)}}}
}

// req is one request; body is JSON unless contentType says otherwise.
type req struct {
	method, path, body string
	contentType        string
	accept             string
}

// do sends r and returns the response with its whole body.
func (rc restClient) do(r req) (*http.Response, []byte) {
	rc.t.Helper()
	hr, err := http.NewRequestWithContext(rc.t.Context(), r.method, "http://memcluster"+r.path, strings.NewReader(r.body))
	if err != nil {
		rc.t.Fatal(err)
	}
	ct := r.contentType
	if ct == "" && r.body != "" {
		ct = "application/json"
	}
	if ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	if r.accept != "" {
		hr.Header.Set("Accept", r.accept)
	}
	resp, err := rc.hc.Do(hr)
	if err != nil {
		rc.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatalf("%s %s: reading the body: %v", r.method, r.path, err)
	}
	return resp, b
}

// summary describes a JSON response in one line: "<code> Status <reason>"
// for a Status, "<code> <Kind> <name> rv=<rv> gen=<generation>" for an
// object, "<code> <Kind> items=<n>" for a list.
func summary(code int, body []byte) string {
	var m struct {
		Kind     string          `json:"kind"`
		Reason   string          `json:"reason"`
		Status   json.RawMessage `json:"status"`
		Items    []any           `json:"items"`
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
			Generation      int64  `json:"generation"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Sprintf("%d undecodable: %q", code, body)
	}
	switch {
	case m.Kind == "Status" && string(m.Status) == `"`+metav1.StatusSuccess+`"`:
		return fmt.Sprintf("%d Status Success", code)
	case m.Kind == "Status":
		return fmt.Sprintf("%d Status %s", code, m.Reason)
	case strings.HasSuffix(m.Kind, "List"):
		return fmt.Sprintf("%d %s items=%d", code, m.Kind, len(m.Items))
	default:
		return fmt.Sprintf("%d %s %s rv=%s gen=%d", code, m.Kind, m.Metadata.Name, m.Metadata.ResourceVersion, m.Metadata.Generation)
	}
}

const deploymentJSON = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"tier":"front"}},
"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}}}`
