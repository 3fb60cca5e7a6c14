package main

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// TestServeInsecureClash: a second instance on the same --bind-address
// fails at start, as a second kube-controller-manager does on its secure
// port, and says what to do; 127.0.0.1:0 takes any free port.
func TestServeInsecureClash(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = serveInsecure(logr.Discard(), ln.Addr().String(), http.NewServeMux())
	if err == nil || !strings.Contains(err.Error(), "address already in use: another process serves it (a second ctrlkit-controller on this host?)") ||
		!strings.Contains(err.Error(), "127.0.0.1:0 for a free one") {
		t.Fatalf("second instance on %s: %v", ln.Addr(), err)
	}
	stop, err := serveInsecure(logr.Discard(), "127.0.0.1:0", http.NewServeMux())
	if err != nil {
		t.Fatal(err)
	}
	stop()
}
