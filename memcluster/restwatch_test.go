package memcluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
)

// openWatch starts a watch request and returns its response; the body is
// closed at the end of the test.
func openWatch(t *testing.T, c *Cluster, path, accept string) *http.Response {
	t.Helper()
	hr, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://memcluster"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		hr.Header.Set("Accept", accept)
	}
	resp, err := (&http.Client{Transport: Transport{Handler: NewHandler(c)}}).Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// jsonEvents reads n watch events from a JSON stream, each described as
// "TYPE name" (bookmarks: "BOOKMARK rv annotations", errors: "ERROR code reason").
func jsonEvents(t *testing.T, body io.Reader, n int) []string {
	t.Helper()
	dec := json.NewDecoder(body)
	var out []string
	for range n {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Kind     string `json:"kind"`
				Code     int    `json:"code"`
				Reason   string `json:"reason"`
				Metadata struct {
					Name            string            `json:"name"`
					ResourceVersion string            `json:"resourceVersion"`
					Annotations     map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			out = append(out, "end: "+err.Error())
			return out
		}
		o := ev.Object
		switch ev.Type {
		case "BOOKMARK":
			out = append(out, fmt.Sprintf("BOOKMARK %s %s %v", o.Kind, o.Metadata.ResourceVersion, o.Metadata.Annotations))
		case "ERROR":
			out = append(out, fmt.Sprintf("ERROR %d %s", o.Code, o.Reason))
		default:
			out = append(out, fmt.Sprintf("%s %s %s", ev.Type, o.Kind, o.Metadata.Name))
		}
	}
	return out
}

func TestHandlerWatchJSON(t *testing.T) {
	c, _ := newTestCluster(t)
	pods := c.Pods("ns")
	must(pods.Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
	_, rv, err := pods.List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resp := openWatch(t, c, "/api/v1/namespaces/ns/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+rv, "")
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/json" {
		t.Fatalf("watch answered %d %q; want 200 application/json", resp.StatusCode, ct)
	}
	must(pods.Create(ctxT(t), pod("b", "", ""), metav1.CreateOptions{}))(t)
	must(pods.Patch(ctxT(t), "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"1"}}}`), metav1.PatchOptions{}))(t)
	c.Bookmark()
	if err := pods.Delete(ctxT(t), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	must(c.Pods("other").Create(ctxT(t), podIn("other", "elsewhere"), metav1.CreateOptions{}))(t)
	must(pods.Create(ctxT(t), pod("c", "", ""), metav1.CreateOptions{}))(t)
	got := jsonEvents(t, resp.Body, 6)
	// A deleted pod is written with its deletionTimestamp first, as by kube-apiserver.
	want := []string{"ADDED Pod b", "MODIFIED Pod a", "BOOKMARK Pod 4 map[]", "MODIFIED Pod b", "DELETED Pod b", "ADDED Pod c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

// WatchList (client-go's default since 1.35): the current state as ADDED
// events, then a bookmark that marks their end, then what happens next.
func TestHandlerWatchSendInitialEvents(t *testing.T) {
	c, _ := newTestCluster(t)
	for _, n := range []string{"b", "a"} {
		must(c.Pods("ns").Create(ctxT(t), pod(n, "", ""), metav1.CreateOptions{}))(t)
	}
	must(c.Pods("other").Create(ctxT(t), podIn("other", "x"), metav1.CreateOptions{}))(t)
	resp := openWatch(t, c, "/api/v1/namespaces/ns/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", "")
	must(c.Pods("ns").Create(ctxT(t), pod("c", "", ""), metav1.CreateOptions{}))(t)
	got := jsonEvents(t, resp.Body, 4)
	want := []string{"ADDED Pod a", "ADDED Pod b", "BOOKMARK Pod 4 map[k8s.io/initial-events-end:true]", "ADDED Pod c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

// A compacted resourceVersion is answered inside the stream with a 410
// ERROR event, after which the stream ends: the client lists again.
func TestHandlerWatchExpired(t *testing.T) {
	c := New(Config{Clock: newFake(), WatchHistory: 2})
	for i := range 5 {
		must(c.Pods("ns").Create(ctxT(t), pod(fmt.Sprint("p", i), "", ""), metav1.CreateOptions{}))(t)
	}
	resp := openWatch(t, c, "/api/v1/pods?watch=true&resourceVersion=1", "")
	got := jsonEvents(t, resp.Body, 2)
	want := []string{"ERROR 410 Expired", "end: EOF"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

// Protobuf, as client-go's typed clients and controller-runtime ask for
// built-in kinds: length-delimited WatchEvent frames, each embedding its
// object in the protobuf envelope.
func TestHandlerWatchProtobuf(t *testing.T) {
	c, _ := newTestCluster(t)
	resp := openWatch(t, c, "/apis/apps/v1/namespaces/ns/replicasets?watch=true", "application/vnd.kubernetes.protobuf,application/json")
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Fatalf("Content-Type = %q; want the protobuf watch stream", ct)
	}
	must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("web", nil), metav1.CreateOptions{}))(t)
	s := runtime.NewScheme()
	if err := appsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	metav1.AddToGroupVersion(s, appsv1.SchemeGroupVersion)
	info, ok := runtime.SerializerInfoForMediaType(serializer.NewCodecFactory(s).SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	dec := streaming.NewDecoder(info.StreamSerializer.Framer.NewFrameReader(resp.Body), info.StreamSerializer.Serializer)
	var ev metav1.WatchEvent
	if _, _, err := dec.Decode(nil, &ev); err != nil {
		t.Fatal(err)
	}
	obj, gvk, err := info.Serializer.Decode(ev.Object.Raw, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, ok := obj.(*appsv1.ReplicaSet)
	if ev.Type != "ADDED" || !ok || rs.Name != "web" || gvk.Kind != "ReplicaSet" {
		t.Errorf("event = %s %s %T; want ADDED of ReplicaSet web", ev.Type, gvk, obj)
	}
}

// Closing the response body ends the watch on the server: its handler
// returns and the cluster forgets the watcher.
func TestHandlerWatchEndsWithClient(t *testing.T) {
	c, _ := newTestCluster(t)
	returned := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		NewHandler(c).ServeHTTP(w, r)
	})
	hr, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://memcluster/api/v1/pods?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: Transport{Handler: h}}).Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	must(c.Pods("ns").Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
	if got := jsonEvents(t, resp.Body, 1); !cmp.Equal(got, []string{"ADDED Pod a"}) {
		t.Errorf("events = %v", got)
	}
	resp.Body.Close()
	<-returned
	c.mu.Lock()
	n := len(c.pods.watchers)
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d pod watchers left after the client closed the stream", n)
	}
}

// Metadata-only watches (client-go's metadata informers) get
// PartialObjectMetadata objects.
func TestHandlerWatchPartialMetadata(t *testing.T) {
	c, _ := newTestCluster(t)
	resp := openWatch(t, c, "/api/v1/pods?watch=true", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")
	p := pod("a", "", "")
	p.Status.Phase = corev1.PodRunning
	must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
	if got := jsonEvents(t, resp.Body, 1); !cmp.Equal(got, []string{"ADDED PartialObjectMetadata a"}) {
		t.Errorf("events = %v; want a PartialObjectMetadata", got)
	}
}

func podIn(ns, name string) *corev1.Pod {
	p := pod(name, "", "")
	p.Namespace = ns
	return p
}
