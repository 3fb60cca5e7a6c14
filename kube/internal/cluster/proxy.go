package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
	"k8s.io/client-go/rest"
)

// ProxyFaults is what a [Proxy] does to the requests it passes on. The
// zero value passes everything through untouched.
type ProxyFaults struct {
	// ErrorRate is the fraction of requests answered, without being
	// passed on, with an error: in equal parts 429 Too Many Requests with
	// Retry-After: 1 (client-go waits and retries), 500 and 503 (returned
	// to the caller).
	ErrorRate float64
	// DelayRate is the fraction of requests held for up to MaxDelay
	// (uniformly) before they are passed on.
	DelayRate float64
	MaxDelay  time.Duration
	// CutWatches, if positive, ends every watch stream after a random
	// time of up to CutWatches, as a load balancer or a restarting
	// apiserver would: the client sees the stream end and watches again.
	CutWatches time.Duration
	// WatchLag delays every byte of watch streams by this much: the
	// client's caches lag the server by WatchLag while its writes go
	// through at once.
	WatchLag time.Duration
	// WatchLagResource, if set, limits WatchLag to the watch streams of
	// that resource ("pods"): one informer lags, the others do not.
	WatchLagResource string
}

// ProxyRequest is one request that went through a [Proxy].
type ProxyRequest struct {
	Start, End time.Time
	Request    kube.Request
	Path       string
	Code       int // 0: the request failed without a response
	Injected   bool
}

// Proxy is a TLS (HTTP/2) reverse proxy in front of a [ControlPlane]'s
// API server that injects faults, seeded, into what passes through, and
// records every request. Point a client at it with Config or Kubeconfig.
type Proxy struct {
	cp  *ControlPlane
	srv *httptest.Server
	dir string

	mu     sync.Mutex
	rnd    *rand.Rand
	faults ProxyFaults
	log    []ProxyRequest
}

// StartProxy starts a proxy in front of cp, with faults drawn from seed.
// It passes everything through until SetFaults. dir receives its CA
// certificate and kubeconfig.
func StartProxy(cp *ControlPlane, seed uint64, dir string) (*Proxy, error) {
	target, err := url.Parse(cp.Server)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(cp.Dir, "certs", "apiserver.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	upstream := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 100}
	p := &Proxy{cp: cp, dir: dir, rnd: rand.New(rand.NewPCG(seed, 0xfa17))}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     upstream,
		FlushInterval: -1, // watch events go out as they come
		ModifyResponse: func(resp *http.Response) error {
			if isWatch(resp.Request) {
				resp.Body = p.watchBody(resp.Body, resp.Request.URL.Path)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// The apiserver is down (or the client gone): fail as a
			// broken connection would, not with an HTTP answer.
			panic(http.ErrAbortHandler)
		},
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.serve(w, r, rp)
	}))
	p.srv.EnableHTTP2 = true
	p.srv.Config.ErrorLog = nil
	p.srv.StartTLS()
	if err := p.writeKubeconfig(); err != nil {
		p.srv.Close()
		return nil, err
	}
	return p, nil
}

// SetFaults sets the faults from now on (streams already open keep their
// cut deadline; lag applies to the bytes read from now on).
func (p *Proxy) SetFaults(f ProxyFaults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = f
}

// Close stops the proxy and ends the streams going through it.
func (p *Proxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// Kubeconfig returns the path of a kubeconfig that reaches the API server
// through the proxy, as the control plane's admin.
func (p *Proxy) Kubeconfig() string { return filepath.Join(p.dir, "kubeconfig") }

// Config returns an admin client configuration through the proxy.
func (p *Proxy) Config(qps float32, burst int) *rest.Config {
	return &rest.Config{Host: p.srv.URL, BearerToken: p.cp.Token, QPS: qps, Burst: burst,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(p.dir, "proxy.crt")}}
}

// Requests returns the requests recorded so far, in the order they ended.
func (p *Proxy) Requests() []ProxyRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

func (p *Proxy) writeKubeconfig() error {
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(p.dir, "proxy.crt"), crt, 0o644); err != nil {
		return err
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: proxy
  context: {cluster: proxy, user: admin}
current-context: proxy
`, p.srv.URL, filepath.Join(p.dir, "proxy.crt"), p.cp.Token)
	return os.WriteFile(p.Kubeconfig(), []byte(kc), 0o600)
}

// decide draws the fate of one request: an injected error code (0: none)
// and a delay.
func (p *Proxy) decide() (code int, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.faults
	if f.ErrorRate > 0 && p.rnd.Float64() < f.ErrorRate {
		code = []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable}[p.rnd.IntN(3)]
	}
	if f.DelayRate > 0 && f.MaxDelay > 0 && p.rnd.Float64() < f.DelayRate {
		delay = time.Duration(p.rnd.Int64N(int64(f.MaxDelay)))
	}
	return code, delay
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	rec := ProxyRequest{Start: time.Now(), Request: kube.Classify(r), Path: r.URL.Path}
	defer func() {
		rec.End = time.Now()
		p.mu.Lock()
		p.log = append(p.log, rec)
		p.mu.Unlock()
	}()
	code, delay := p.decide()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if code != 0 {
		rec.Code, rec.Injected = code, true
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected by the fault proxy","reason":%q,"code":%d}`,
			reason(code), code)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	next.ServeHTTP(sw, r)
	rec.Code = sw.code
}

func reason(code int) string {
	switch code {
	case http.StatusTooManyRequests:
		return "TooManyRequests"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	}
	return "InternalError"
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func isWatch(r *http.Request) bool {
	if r == nil {
		return false
	}
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1" || strings.Contains(r.URL.Path, "/watch/")
}

// watchBody wraps a watch stream with the faults set now: a cut deadline
// and the lag (read again for every chunk).
func (p *Proxy) watchBody(body io.ReadCloser, path string) io.ReadCloser {
	p.mu.Lock()
	f := p.faults
	var cut time.Time
	if f.CutWatches > 0 {
		cut = time.Now().Add(time.Duration(1 + p.rnd.Int64N(int64(f.CutWatches))))
	}
	p.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	lb := &laggedBody{body: body, chunks: make(chan chunk, 1024), cancel: cancel, ctx: ctx, path: path}
	if !cut.IsZero() {
		lb.cut = time.NewTimer(time.Until(cut))
	}
	go lb.pump(p)
	return lb
}

type chunk struct {
	due  time.Time
	data []byte
	err  error
}

// laggedBody hands out the bytes of body no earlier than their due time
// (arrival + lag), and ends at the cut deadline, if any.
type laggedBody struct {
	body   io.ReadCloser
	chunks chan chunk
	cur    []byte
	err    error
	cut    *time.Timer
	ctx    context.Context
	cancel context.CancelFunc
	path   string // of the watch request
}

func (l *laggedBody) pump(p *Proxy) {
	defer close(l.chunks)
	for {
		buf := make([]byte, 32<<10)
		n, err := l.body.Read(buf)
		p.mu.Lock()
		lag := p.faults.WatchLag
		if r := p.faults.WatchLagResource; r != "" && !strings.HasSuffix(l.path, "/"+r) {
			lag = 0
		}
		p.mu.Unlock()
		c := chunk{due: time.Now().Add(lag), data: buf[:n], err: err}
		select {
		case l.chunks <- c:
		case <-l.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (l *laggedBody) Read(b []byte) (int, error) {
	for len(l.cur) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		var cutC <-chan time.Time
		if l.cut != nil {
			cutC = l.cut.C
		}
		select {
		case c, ok := <-l.chunks:
			if !ok {
				return 0, io.EOF
			}
			if d := time.Until(c.due); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-cutC:
					t.Stop()
					l.err = io.EOF
					return 0, io.EOF
				}
			}
			l.cur, l.err = c.data, c.err
		case <-cutC:
			l.err = io.EOF
			return 0, io.EOF
		}
	}
	n := copy(b, l.cur)
	l.cur = l.cur[n:]
	return n, nil
}

func (l *laggedBody) Close() error {
	l.cancel()
	if l.cut != nil {
		l.cut.Stop()
	}
	return l.body.Close()
}
