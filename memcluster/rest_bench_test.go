package memcluster

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cost of one request through the Transport and the Handler, the
// overhead a REST client pays over a direct Client call.
func BenchmarkREST(b *testing.B) {
	c := New(Config{Seed: 1})
	ctx := b.Context()
	for i := range 100 {
		p := pod(fmt.Sprint("p", i), "", "")
		if _, err := c.Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	hc := &http.Client{Transport: Transport{Handler: NewHandler(c)}}
	run := func(b *testing.B, method, path, accept, body string) {
		for i := 0; b.Loop(); i++ {
			req, err := http.NewRequestWithContext(ctx, method, "http://memcluster"+path, strings.NewReader(strings.ReplaceAll(body, "NAME", fmt.Sprint("n", i))))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Accept", accept)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode >= 300 {
				b.Fatalf("%s %s: %s", method, path, resp.Status)
			}
		}
	}
	b.Run("get/json", func(b *testing.B) { run(b, "GET", "/api/v1/namespaces/ns/pods/p1", "application/json", "") })
	b.Run("get/protobuf", func(b *testing.B) {
		run(b, "GET", "/api/v1/namespaces/ns/pods/p1", "application/vnd.kubernetes.protobuf", "")
	})
	b.Run("list-100/json", func(b *testing.B) { run(b, "GET", "/api/v1/namespaces/ns/pods", "application/json", "") })
	b.Run("create/json", func(b *testing.B) {
		run(b, "POST", "/apis/apps/v1/namespaces/ns/replicasets", "application/json", `{"metadata":{"name":"NAME"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`)
	})
	b.Run("direct-get", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Pods("ns").Get(ctx, "p1", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
