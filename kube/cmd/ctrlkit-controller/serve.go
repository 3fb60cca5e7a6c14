package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/cert"
)

// handlers returns the mux of /healthz, /metrics and, with profiling,
// /debug/pprof.
func handlers(metrics http.Handler, watchdog *leaderelection.HealthzAdaptor, profiling bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := watchdog.Check(r); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/metrics", metrics)
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// serveInsecure serves h in plain HTTP on addr, which must be a loopback
// address: whoever reaches it is trusted.
func serveInsecure(log logr.Logger, addr string, h http.Handler) (func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--bind-address: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--bind-address=%s: plain HTTP is served on loopback only; use --secure-port to serve other addresses", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		// As kube-controller-manager on its secure port, a second instance
		// on the host cannot start on the same port: say what to do.
		return nil, fmt.Errorf("--bind-address=%s: %w: another process serves it (a second ctrlkit-controller on this host?); "+
			"give each instance its own port, 127.0.0.1:0 for a free one (logged at start), or --bind-address= to serve none", addr, err)
	}
	if err != nil {
		return nil, err
	}
	return start(log, ln, h, "Serving /healthz and /metrics in plain HTTP on loopback"), nil
}

// secureOptions configure the secure port.
type secureOptions struct {
	bindAddress  string // IP
	port         int
	certFile     string
	keyFile      string
	alwaysAllow  []string // paths served without authentication
	authCacheTTL time.Duration
}

// serveSecure serves h over TLS on o.port, as kube-controller-manager's
// --secure-port does: every request but those for the always-allowed
// paths must carry a bearer token that the API server authenticates
// (TokenReview) and authorizes for the path and verb (SubjectAccessReview,
// a non-resource request: ClusterRole rule nonResourceURLs ["/metrics"],
// verbs ["get"]). Without a certificate it serves a self-signed one made
// at start.
func serveSecure(log logr.Logger, cs kubernetes.Interface, o secureOptions, h http.Handler) (func(), error) {
	var pair tls.Certificate
	var err error
	if o.certFile != "" || o.keyFile != "" {
		pair, err = tls.LoadX509KeyPair(o.certFile, o.keyFile)
	} else {
		var crt, key []byte
		if crt, key, err = cert.GenerateSelfSignedCertKey("ctrlkit-controller", nil, []string{"localhost"}); err == nil {
			pair, err = tls.X509KeyPair(crt, key)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("secure serving certificate: %w", err)
	}
	// The webhooks' retry parameters of kube-controller-manager's
	// delegated authentication and authorization.
	backoff := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient: cs.AuthenticationV1(), TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff: backoff, CacheTTL: o.authCacheTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("delegated authentication: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: cs.AuthorizationV1(), AllowCacheTTL: o.authCacheTTL, DenyCacheTTL: o.authCacheTTL,
		WebhookRetryBackoff: backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("delegated authorization: %w", err)
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(o.bindAddress, fmt.Sprint(o.port)),
		&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("--secure-port=%d: %w: another process serves it (a second instance on this host, or kube-controller-manager's 10257?); give each its own --secure-port", o.port, err)
	}
	if err != nil {
		return nil, err
	}
	return start(log, ln, guard(log, authn, authz, o.alwaysAllow, h), "Serving /healthz, /metrics and /debug/pprof over TLS"), nil
}

// guard authenticates and authorizes each request for h, except those
// for the paths in alwaysAllow: 401 without valid credentials, 403 when
// the API server does not allow the user the verb on the path.
func guard(log logr.Logger, authn authenticator.Request, authz authorizer.Authorizer, alwaysAllow []string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(alwaysAllow, r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		res, ok, err := authn.AuthenticateRequest(r)
		if err != nil || !ok {
			if err != nil {
				log.V(2).Info("Authentication failed", "path", r.URL.Path, "err", err)
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := authorizer.AttributesRecord{User: res.User, Verb: strings.ToLower(r.Method), Path: r.URL.Path}
		decision, reason, err := authz.Authorize(r.Context(), attrs)
		if err != nil {
			log.Error(err, "Authorization failed", "user", res.User.GetName(), "path", r.URL.Path)
			http.Error(w, "Authorization failed", http.StatusInternalServerError)
			return
		}
		if decision != authorizer.DecisionAllow {
			log.V(2).Info("Forbidden", "user", res.User.GetName(), "verb", attrs.Verb, "path", r.URL.Path, "reason", reason)
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, path=%s)", res.User.GetName(), attrs.Verb, r.URL.Path), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// start serves h on ln until the returned function is called.
func start(log logr.Logger, ln net.Listener, h http.Handler, msg string) func() {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, msg)
		}
	}()
	log.Info(msg, "address", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Error(err, "Stopping the HTTP server", "address", ln.Addr().String())
		}
	}
}
