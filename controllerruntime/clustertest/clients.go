package clustertest

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/internal/admit"
)

// Every request the bench serves carries, in its context, the name of the
// client it comes from: the bench's scheduler orders requests that are
// otherwise alike by it (two informers of one kind, say: otherwise the
// order in which their goroutines happened to run would decide which watch
// gets which number, and which request an injected fault hits), and the
// trace and Check name it.
//
// A REST client's name comes from the rest.Config it was built from:
// "manager" for the config [Cluster.NewManager] uses, "client" for
// [Cluster.Client]'s, "config" for [Cluster.Config]'s, numbered from the
// second on ("manager#2"). The built-in controllers name themselves.

// testClient is the name of [Cluster.Client]'s client.
const testClient = "client"

type clientKey struct{}

// withClient returns ctx naming the client name.
func withClient(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, clientKey{}, name)
}

// clientOf is the name of the client of a request's context, or "".
func clientOf(ctx context.Context) string {
	name, _ := ctx.Value(clientKey{}).(string)
	return name
}

// named is a RoundTripper that names its client in every request.
type named struct {
	name string
	next http.RoundTripper
}

func (n named) RoundTrip(req *http.Request) (*http.Response, error) {
	return n.next.RoundTrip(req.WithContext(withClient(req.Context(), n.name)))
}

// counter numbers names: the first "x" is "x", the second "x#2".
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) next(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
	if k := c.n[name]; k > 1 {
		return fmt.Sprintf("%s#%d", name, k)
	}
	return name
}

// namedConfig returns a copy of cfg whose HTTP clients name themselves
// name. A WrapTransport already in cfg wraps ours.
func namedConfig(cfg *rest.Config, name string) *rest.Config {
	out := rest.CopyConfig(cfg)
	outer := cfg.WrapTransport
	out.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		rt = named{name: name, next: rt}
		if outer != nil {
			rt = outer(rt)
		}
		return rt
	}
	return out
}

// call is one REST request as the trace tells it: who sent it, and what
// it was answered.
type call struct {
	client       string
	method       string
	precondition string // the resourceVersion an update or a patch carried
	subresource  string
	userAgent    string
	fieldManager string
	// body is a hash of the request's body: the scheduler orders by it
	// requests alike in all else (two events of one object created at one
	// instant by two goroutines), which would otherwise go in the order
	// their goroutines happened to run.
	body uint64

	// guarded by the recorder's mutex:
	lines []int // the trace lines of its admissions (a deletecollection has several)
	code  int   // the HTTP status answered, once it is
}

type callKey struct{}

func callOf(ctx context.Context) *call {
	cl, _ := ctx.Value(callKey{}).(*call)
	return cl
}

// manager is the name the API server gives the writer of a request in
// managedFields: its fieldManager, or else its user agent up to the first
// "/" (kube-apiserver's default).
func (cl *call) manager() string {
	if cl.fieldManager != "" {
		return cl.fieldManager
	}
	ua, _, _ := strings.Cut(cl.userAgent, "/")
	return ua
}

// front is the bench's side of the REST handler: it refuses watch-list
// requests (see withoutWatchList), and follows every request for the trace
// and for the answers that say what is stuck.
type front struct {
	rec  *recorder
	next http.Handler
	// preconditions makes front read the precondition of updates and
	// patches (for Explore's properties), from JSON, YAML and protobuf bodies.
	preconditions bool
	// filter, if set, sees each request once front has read it (tests).
	filter *atomic.Pointer[func(*http.Request)]
	// latency delays every request before it is served
	// (Options.RequestLatency).
	latency time.Duration
}

func (f front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cl := &call{
		client:       clientOf(r.Context()),
		method:       r.Method,
		subresource:  subresourceOf(r.URL.Path),
		userAgent:    r.UserAgent(),
		fieldManager: r.URL.Query().Get("fieldManager"),
	}
	if f.preconditions {
		cl.precondition = precondition(r)
	}
	if r.Body != nil && r.Method != http.MethodGet {
		cl.body = hashBody(r)
	}
	if f.filter != nil {
		if fn := f.filter.Load(); fn != nil {
			(*fn)(r)
		}
	}
	if f.latency > 0 && isResourcePath(r.URL.Path) {
		wait(r.Context(), f.latency) // a request whose context ends meanwhile fails when served
	}
	cw := &codeWriter{ResponseWriter: w, cl: cl, f: f, path: r.URL.Path}
	ctx := context.WithValue(r.Context(), callKey{}, cl)
	if cl.client != "" && r.Header.Get("Impersonate-User") == "" {
		// The user admission sees (webhooks' userInfo): the bench's name of
		// the client, with the powers of envtest's admin.
		ctx = admit.WithUser(ctx, admit.User{Name: cl.client, Groups: []string{"system:masters", "system:authenticated"}})
	}
	withoutWatchList{next: f.next}.ServeHTTP(cw, r.WithContext(ctx))
	cw.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
}

// subresourceOf is the subresource of a REST path
// (…/<resource>/<name>/status), or "".
func subresourceOf(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return ""
	}
	if len(segs) > 0 && segs[0] == "watch" {
		segs = segs[1:]
	}
	if len(segs) >= 4 && segs[0] == "namespaces" {
		segs = segs[2:] // namespaces/<ns>/<resource>/…
	}
	if len(segs) == 3 && (segs[0] != "namespaces" || segs[2] == "status" || segs[2] == "finalize") {
		return segs[2]
	}
	return ""
}

// codeWriter notes the status code of an answer.
type codeWriter struct {
	http.ResponseWriter
	cl      *call
	f       front
	path    string
	written bool
}

func (w *codeWriter) WriteHeader(code int) {
	if w.written {
		return
	}
	w.written = true
	w.f.rec.answered(w.cl, code, w.path)
	w.ResponseWriter.WriteHeader(code)
}

func (w *codeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// Flush passes a watch's flushes on.
func (w *codeWriter) Flush() {
	w.WriteHeader(http.StatusOK)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// hashBody returns a hash of r's body, which it reads and puts back.
func hashBody(r *http.Request) uint64 {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return 0 // the handler meets the same error
	}
	h := fnv.New64a()
	h.Write(body)
	return h.Sum64()
}

// isResourcePath reports whether a REST path names resources
// (/api/v1/pods, /apis/apps/v1/namespaces/x/deployments/y/status), not
// discovery (/api, /apis/apps/v1) or /version. Discovery goes without
// Options.RequestLatency: controller-runtime's REST mapper and cache
// discover while holding locks other goroutines wait for, and a goroutine
// waiting for a lock is not durably blocked: a latency there would hold
// the bubble's clock for ever.
func isResourcePath(path string) bool {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) > 0 && segs[0] == "api":
		return len(segs) > 2
	case len(segs) > 0 && segs[0] == "apis":
		return len(segs) > 3
	}
	return false
}

// wait waits for d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
