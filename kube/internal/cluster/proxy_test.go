package cluster

import (
	"bufio"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// fakeAPIServer answers every request 200 "ok", and streams watches: a
// line per value sent on lines, until the client goes.
func fakeAPIServer(t *testing.T, lines <-chan string) *ControlPlane {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			fmt.Fprint(w, "ok")
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case l := <-lines:
				fmt.Fprintln(w, l)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o755); err != nil {
		t.Fatal(err)
	}
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "certs", "apiserver.crt"), crt, 0o644); err != nil {
		t.Fatal(err)
	}
	return &ControlPlane{Dir: dir, Server: srv.URL, Token: "t"}
}

func proxyClient(t *testing.T, p *Proxy) *http.Client {
	t.Helper()
	rt, err := rest.TransportFor(p.Config(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rt}
}

func TestProxyPassesThroughAndInjects(t *testing.T) {
	cp := fakeAPIServer(t, nil)
	p, err := StartProxy(cp, 1, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := proxyClient(t, p)
	get := func() int {
		resp, err := c.Get(p.srv.URL + "/api/v1/namespaces/a/pods")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for range 20 {
		if code := get(); code != http.StatusOK {
			t.Fatalf("without faults: %d, want 200", code)
		}
	}
	p.SetFaults(ProxyFaults{ErrorRate: 1})
	codes := map[int]int{}
	for range 60 {
		codes[get()]++
	}
	for _, code := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		if codes[code] == 0 {
			t.Errorf("error rate 1: no %d among %v", code, codes)
		}
	}
	if codes[http.StatusOK] != 0 {
		t.Errorf("error rate 1: %d requests passed", codes[http.StatusOK])
	}
	var injected int
	for _, q := range p.Requests() {
		if q.Injected {
			injected++
		}
	}
	if injected != 60 || len(p.Requests()) != 80 {
		t.Errorf("recorded %d requests, %d injected; want 80, 60", len(p.Requests()), injected)
	}
}

// A watch through a lagging proxy delivers each event no earlier than the
// lag after the server sent it, in order; a cut ends the stream.
func TestProxyLagsAndCutsWatches(t *testing.T) {
	lines := make(chan string)
	cp := fakeAPIServer(t, lines)
	p, err := StartProxy(cp, 1, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const lag = 300 * time.Millisecond
	p.SetFaults(ProxyFaults{WatchLag: lag})
	c := proxyClient(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.srv.URL+"/api/v1/pods?watch=true", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for i := range 3 {
		sent := time.Now()
		lines <- fmt.Sprint(i)
		if !sc.Scan() {
			t.Fatalf("stream ended: %v", sc.Err())
		}
		if got := sc.Text(); got != fmt.Sprint(i) {
			t.Fatalf("event %d: got %q", i, got)
		}
		if d := time.Since(sent); d < lag {
			t.Errorf("event %d arrived after %v, before the lag of %v", i, d, lag)
		}
	}

	// A cut: the stream ends by itself (the client waits for the end of
	// the stream, however long the cut takes).
	p.SetFaults(ProxyFaults{CutWatches: 100 * time.Millisecond})
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, p.srv.URL+"/api/v1/pods?watch=true", nil)
	resp2, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if _, err := io.Copy(io.Discard, resp2.Body); err != nil {
		t.Fatalf("cut stream: %v", err)
	}
}
