package memcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, ctx context.Context, h http.Handler) (*http.Response, error) {
	t.Helper()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://memcluster/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	return Transport{Handler: h}.RoundTrip(hr)
}

func TestTransportBuffered(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", r.Host+" "+r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, "hello")
	})
	resp, err := get(t, t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %s %d %s", resp.Status, resp.Header.Get("X-Test"), resp.ContentLength, b)
	if want := "418 I'm a teapot memcluster /x 5 hello"; got != want {
		t.Errorf("response = %q; want %q", got, want)
	}
}

// A flushing handler streams: the client reads what it wrote before it
// returns.
func TestTransportStreams(t *testing.T) {
	next := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "first\n")
		w.(http.Flusher).Flush()
		<-next
		fmt.Fprint(w, "second\n")
	})
	resp, err := get(t, t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("first\n"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first\n" {
		t.Fatalf("first read = %q, %v", buf, err)
	}
	close(next)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "second\n" {
		t.Errorf("rest = %q, %v; want second then EOF", rest, err)
	}
}

// A request whose context ends before the handler answers fails with the
// context's error, and the handler sees its context end.
func TestTransportContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	started, ended := make(chan struct{}), make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		ended <- r.Context().Err()
	})
	go func() {
		<-started
		cancel()
	}()
	if _, err := get(t, ctx, h); !errors.Is(err, context.Canceled) {
		t.Errorf("RoundTrip() error = %v; want context.Canceled", err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("handler context error = %v; want context.Canceled", err)
	}
}

func TestTransportPanic(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	resp, err := get(t, t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), "panicked: boom") {
		t.Errorf("response = %d %s; want 500 naming the panic", resp.StatusCode, b)
	}
	if _, err := (Transport{}).RoundTrip(&http.Request{}); err == nil {
		t.Error("a Transport without a Handler did not fail")
	}
}
