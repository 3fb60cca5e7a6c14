package memcluster

import (
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/ctrlkit/ctrlkit/internal/admit"
)

// What the REST API adds to a request for admission: who sent it, and the
// Warning headers of the answer.

// forAdmission returns the request with its user (unless its context
// names one already) and, for a write, a collector of the warnings
// admission adds, and the writer that answers them as Warning headers.
func (c *Cluster) forAdmission(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	if !c.admitting() {
		return w, r
	}
	ctx := r.Context()
	if _, ok := admit.UserFrom(ctx); !ok {
		ctx = admit.WithUser(ctx, restUser(r))
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		var warnings *admit.Warnings
		ctx, warnings = admit.WithWarnings(ctx)
		w = &warningWriter{ResponseWriter: w, warnings: warnings}
	}
	return w, r.WithContext(ctx)
}

// restUser is the user of a REST request: the one it impersonates
// (client-go's rest.Config.Impersonate), else the field manager its
// User-Agent names, as memcluster has no authentication; every user is in
// system:authenticated.
func restUser(r *http.Request) admit.User {
	h := r.Header
	u := admit.User{Name: h.Get(authenticationv1.ImpersonateUserHeader), UID: h.Get(authenticationv1.ImpersonateUIDHeader)}
	if u.Name == "" {
		return admit.User{Name: requestManager("", r), Groups: []string{"system:authenticated"}}
	}
	u.Groups = append(h.Values(authenticationv1.ImpersonateGroupHeader), "system:authenticated")
	for key, values := range h {
		if name, ok := strings.CutPrefix(key, authenticationv1.ImpersonateUserExtraHeaderPrefix); ok {
			if name, err := url.PathUnescape(name); err == nil {
				if u.Extra == nil {
					u.Extra = map[string][]string{}
				}
				u.Extra[strings.ToLower(name)] = values
			}
		}
	}
	return u
}

// warningWriter adds the warnings of a request to its answer's headers
// when the answer starts.
type warningWriter struct {
	http.ResponseWriter
	warnings *admit.Warnings
	started  bool
}

func (w *warningWriter) WriteHeader(code int) {
	if !w.started {
		w.started = true
		for _, text := range w.warnings.List() {
			if v, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
				w.Header().Add("Warning", v)
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *warningWriter) Write(b []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}
