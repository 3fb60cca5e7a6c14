package clustertest

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// precondition reads metadata.resourceVersion from the bodies clients
// send, and leaves the body for the handler.
func TestPrecondition(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", ResourceVersion: "42",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	d.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	var pb bytes.Buffer
	if err := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme).Encode(d, &pb); err != nil {
		t.Fatal(err)
	}
	noRV := d.DeepCopy()
	noRV.ResourceVersion = ""
	var pbNoRV bytes.Buffer
	if err := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme).Encode(noRV, &pbNoRV); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, contentType, body, want string
	}{
		{"protobuf update", http.MethodPut, runtime.ContentTypeProtobuf, pb.String(), "42"},
		{"protobuf without a resourceVersion", http.MethodPut, runtime.ContentTypeProtobuf, pbNoRV.String(), ""},
		{"protobuf, not an envelope", http.MethodPut, runtime.ContentTypeProtobuf, "{}", ""},
		{"JSON update", http.MethodPut, runtime.ContentTypeJSON, `{"metadata":{"name":"web","resourceVersion":"7"},"spec":{}}`, "7"},
		{"merge patch", http.MethodPatch, "application/merge-patch+json", `{"metadata":{"resourceVersion":"8"}}`, "8"},
		{"JSON patch", http.MethodPatch, "application/json-patch+json", `[{"op":"replace","path":"/metadata/resourceVersion","value":"9"}]`, "9"},
		{"YAML update", http.MethodPut, "application/yaml", "metadata:\n  resourceVersion: \"10\"\n", "10"},
		{"a create carries none", http.MethodPost, runtime.ContentTypeJSON, `{"metadata":{"resourceVersion":"11"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := http.NewRequest(tc.method, "http://memcluster/apis/apps/v1/namespaces/default/deployments/web", bytes.NewReader([]byte(tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("Content-Type", tc.contentType)
			if got := precondition(r); got != tc.want {
				t.Errorf("precondition = %q; want %q", got, tc.want)
			}
			left, err := io.ReadAll(r.Body)
			if err != nil || string(left) != tc.body {
				t.Errorf("the body left for the handler is %q (%v); want the request's", left, err)
			}
		})
	}
}
