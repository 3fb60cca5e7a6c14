package clustertest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// These tests are inside the package: one breaks the API model on
// purpose (SetRequestFilter), which no user can.

// writers is a scenario of two writers of one ConfigMap: the test's
// client reads it, another client changes it, and the test's client
// writes its change. A bad writer writes without a resourceVersion; a
// good one with the one it read, and reads again on a 409.
func writers(bad bool) func(t testing.TB, c *Cluster) {
	return func(t testing.TB, c *Cluster) {
		ctx := t.Context()
		key := client.ObjectKey{Namespace: "default", Name: "settings"}
		if err := c.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Data: map[string]string{"a": "1", "b": "1"}}); err != nil {
			t.Fatal(err)
		}
		other, err := client.New(c.Config(), client.Options{Scheme: c.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		var mine corev1.ConfigMap
		if err := c.Client().Get(ctx, key, &mine); err != nil {
			t.Fatal(err)
		}
		var theirs corev1.ConfigMap
		if err := other.Get(ctx, key, &theirs); err != nil {
			t.Fatal(err)
		}
		theirs.Data["b"] = "2"
		if err := other.Update(ctx, &theirs); err != nil {
			t.Fatal(err)
		}
		mine.Data["a"] = "2"
		if bad {
			mine.ResourceVersion = ""
			if err := c.Client().Update(ctx, &mine); err != nil {
				t.Fatal(err)
			}
			return
		}
		for {
			err := c.Client().Update(ctx, &mine)
			if !apierrors.IsConflict(err) {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := c.Client().Get(ctx, key, &mine); err != nil {
				t.Fatal(err)
			}
			mine.Data["a"] = "2"
		}
	}
}

// staleWriter updates the ConfigMap with the resourceVersion it read,
// after another client changed it: kube-apiserver answers 409.
func staleWriter(t testing.TB, c *Cluster) {
	ctx := t.Context()
	key := client.ObjectKey{Namespace: "default", Name: "settings"}
	if err := c.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	var mine corev1.ConfigMap
	if err := c.Client().Get(ctx, key, &mine); err != nil {
		t.Fatal(err)
	}
	other, err := client.New(c.Config(), client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var theirs corev1.ConfigMap
	if err := other.Get(ctx, key, &theirs); err != nil {
		t.Fatal(err)
	}
	theirs.Data = map[string]string{"b": "2"}
	if err := other.Update(ctx, &theirs); err != nil {
		t.Fatal(err)
	}
	mine.Data = map[string]string{"a": "2"}
	if err := c.Client().Update(ctx, &mine); err != nil && !apierrors.IsConflict(err) {
		t.Fatal(err)
	}
}

// ignorePreconditions makes the API server ignore the resourceVersion of
// every update of a built-in kind (protobuf, as controller-runtime sends
// them): a broken API model.
func ignorePreconditions(c *Cluster) {
	codecs := serializer.NewCodecFactory(c.Scheme())
	pb := protobuf.NewSerializer(c.Scheme(), c.Scheme())
	SetRequestFilter(c, func(r *http.Request) {
		if r.Method != http.MethodPut || !strings.Contains(r.Header.Get("Content-Type"), "protobuf") {
			return
		}
		body, _ := io.ReadAll(r.Body)
		obj, _, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err == nil {
			if m, err := meta.Accessor(obj); err == nil {
				m.SetResourceVersion("")
				var b bytes.Buffer
				if pb.Encode(obj, &b) == nil {
					body = b.Bytes()
				}
			}
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	})
}

func TestNoStaleWrites(t *testing.T) {
	opts := ExploreOptions{Seeds: 2, Properties: []Property{NoStaleWrites()}, Logf: func(string, ...any) {}}
	// The bench's API model answers 409: nothing to report.
	if v := Explore(t, opts, staleWriter); v != nil {
		t.Fatalf("violated %q: %s", v.Property, v.Message)
	}
	// A model that ignores the precondition accepts the stale update.
	opts.ExpectViolation = true
	v := Explore(t, opts, func(t testing.TB, c *Cluster) {
		ignorePreconditions(c)
		staleWriter(t, c)
	})
	if v == nil {
		t.FailNow()
	}
	if v.Property != "no stale write accepted" || !strings.Contains(v.Message, "update configmaps default/settings by client accepted with resourceVersion") {
		t.Errorf("violated %q: %s", v.Property, v.Message)
	}
}

func TestNoLostUpdates(t *testing.T) {
	opts := ExploreOptions{Seeds: 2, Properties: []Property{NoStaleWrites(), NoLostUpdates()}, Logf: func(string, ...any) {}}
	if v := Explore(t, opts, writers(false)); v != nil {
		t.Fatalf("the good writer: violated %q: %s", v.Property, v.Message)
	}
	opts.ExpectViolation = true
	v := Explore(t, opts, writers(true))
	if v == nil {
		t.FailNow()
	}
	if v.Property != "no lost update" || !strings.Contains(v.Message, "update configmaps default/settings by client without a resourceVersion") ||
		!strings.Contains(v.Message, "(written by config)") {
		t.Errorf("violated %q: %s", v.Property, v.Message)
	}
	// Without NoLostUpdates (opt-in), the bad writer passes.
	opts = ExploreOptions{Seeds: 2, Properties: []Property{NoStaleWrites()}, Logf: func(string, ...any) {}}
	if v := Explore(t, opts, writers(true)); v != nil {
		t.Fatalf("violated %q: %s", v.Property, v.Message)
	}
}
