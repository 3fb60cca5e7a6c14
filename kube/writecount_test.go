package kube

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		method, path string
		want         Request
	}{
		{"POST", "/apis/apps/v1/namespaces/ns/replicasets", Request{"create", "replicasets"}},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/web/status", Request{"update", "deployments/status"}},
		{"PATCH", "/api/v1/namespaces/ns/pods/web-1", Request{"patch", "pods"}},
		{"DELETE", "/api/v1/namespaces/ns/pods/web-1", Request{"delete", "pods"}},
		{"DELETE", "/api/v1/namespaces/ns/pods", Request{"deletecollection", "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods", Request{"list", "pods"}},
		{"GET", "/api/v1/pods?watch=true", Request{"watch", "pods"}},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/web", Request{"get", "deployments"}},
		{"GET", "/api/v1/namespaces/ns", Request{"get", "namespaces"}},
		{"POST", "/api/v1/namespaces", Request{"create", "namespaces"}},
		{"POST", "/api/v1/namespaces/ns/events", Request{"create", "events"}},
		{"GET", "/healthz", Request{"get", ""}},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		if got := Classify(req); got != tt.want {
			t.Errorf("Classify(%s %s) = %v; want %v", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestWriteCounterWrap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer srv.Close()
	var wc WriteCounter
	client := &http.Client{Transport: wc.Wrap(http.DefaultTransport)}
	for _, r := range []struct{ method, path string }{
		{"POST", "/api/v1/namespaces/ns/pods"},
		{"POST", "/api/v1/namespaces/ns/pods"},
		{"PUT", "/apis/apps/v1/namespaces/ns/replicasets/a/status"},
		{"GET", "/apis/apps/v1/namespaces/ns/replicasets/a"},
	} {
		req, err := http.NewRequest(r.method, srv.URL+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := map[Request]int{{"create", "pods"}: 2, {"update", "replicasets/status"}: 1, {"get", "replicasets"}: 1}
	if diff := cmp.Diff(want, wc.Counts()); diff != "" {
		t.Errorf("counts mismatch (-want +got):\n%s", diff)
	}
	if got := wc.Writes(); got != 3 {
		t.Errorf("Writes() = %d; want 3", got)
	}
	if diff := cmp.Diff(map[Request]int{{"update", "replicasets/status"}: 1}, wc.Conflicts()); diff != "" {
		t.Errorf("conflicts mismatch (-want +got):\n%s", diff)
	}
}

func ExampleClassify() {
	req := httptest.NewRequest("PUT", "/apis/apps/v1/namespaces/default/deployments/web/status", nil)
	fmt.Println(Classify(req))
	// Output: update deployments/status
}
