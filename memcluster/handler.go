package memcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// handler is the REST API of a cluster; see [NewHandler].
type handler struct {
	c *Cluster

	mu  sync.Mutex
	api *api // guarded by mu; rebuilt when the cluster has more kinds
}

// NewHandler returns a handler that serves the Kubernetes REST API of c
// over HTTP: discovery, and get, list, watch, create, update, patch,
// delete and deletecollection of every kind the cluster stores (those of
// [New] and [AddBuiltinKinds], and yours from [KindFor]),
// with their status and scale subresources, pods/eviction and
// namespaces/finalize, in JSON, YAML and, for the k8s.io/api types,
// protobuf. Unchanged client-go clientsets, the dynamic and metadata
// clients, discovery, informers, and controller-runtime's client, cache
// and REST mapper work against it; [Transport] connects them without a
// socket. See the package documentation for what differs from
// kube-apiserver.
//
// Every request goes through the cluster's admission like a call of
// [Client] does, so injected faults ([Cluster.SetFaults]) reach REST
// clients too, as HTTP errors with the apiserver's status codes (and a
// Retry-After header where the error carries one: 429, server timeouts).
// The verbs are kube-apiserver's: a PUT of the status is "update/status",
// a PATCH of it "patch", the scale subresource is a "get" or an "update"
// of its parent (Deployment, ReplicaSet, StatefulSet or
// ReplicationController), and a deletecollection is a "list" followed by
// a "delete" of each object it lists.
//
// A request for a resource the cluster does not serve is answered 404
// NotFound, with a message that names it and says how to add it.
//
// Two kinds that would be served at the same group, version and resource
// are a programming error: every request is then answered 500, naming them.
//
// The handler is safe for concurrent use, and serves kinds added to the
// cluster after it was created.
func NewHandler(c *Cluster) http.Handler { return &handler{c: c} }

// maxBody bounds request bodies, as kube-apiserver's 3 MiB limit does.
const maxBody = 3 << 20

// current returns the REST view of the cluster's kinds.
func (h *handler) current() (*api, error) {
	h.c.mu.Lock()
	changed := h.c.kindsChanged
	h.c.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.api != nil && h.api.changed == changed {
		return h.api, nil
	}
	h.c.mu.Lock()
	changed = h.c.kindsChanged
	stores := make([]restStore, 0, len(h.c.order))
	for _, k := range h.c.order {
		if views := h.c.customViewsLocked(k); views != nil {
			stores = append(stores, views...)
		} else if st, ok := k.(restStore); ok {
			stores = append(stores, st)
		}
	}
	h.c.mu.Unlock()
	a, err := buildAPI(h.c, stores)
	if err != nil {
		return nil, err
	}
	a.changed = changed
	h.api = a
	return a, nil
}

// request is a parsed resource request path.
type request struct {
	gv          schema.GroupVersion
	namespace   string
	resource    string
	name        string
	subresource string
	watchPath   bool // the legacy /watch/ prefix
}

// ServeHTTP serves one request.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, err := h.current()
	if err != nil {
		writeError(w, nil, representation{}, apierrors.NewInternalError(err))
		return
	}
	w, r = h.c.forAdmission(w, r)
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case segs[0] == "version" && len(segs) == 1:
		serveVersion(w, r)
	case (segs[0] == "healthz" || segs[0] == "livez" || segs[0] == "readyz") && len(segs) == 1:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "ok")
	case segs[0] == "api" && len(segs) <= 2:
		a.serveDiscovery(w, r, segs)
	case segs[0] == "apis" && len(segs) <= 3:
		a.serveDiscovery(w, r, segs)
	case segs[0] == "api":
		a.serveResource(w, r, schema.GroupVersion{Version: segs[1]}, segs[2:])
	case segs[0] == "apis":
		a.serveResource(w, r, schema.GroupVersion{Group: segs[1], Version: segs[2]}, segs[3:])
	default:
		writeError(w, a, representation{}, notFoundPath(r.URL.Path))
	}
}

// serveResource routes a request under a group version.
func (a *api) serveResource(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion, segs []string) {
	rq, st, err := a.parse(gv, segs)
	if err != nil {
		writeError(w, a, representation{}, err)
		return
	}
	in := st.in
	switch rq.subresource {
	case "":
	case "status":
		if !in.status {
			writeError(w, a, representation{}, notFoundPath(r.URL.Path))
			return
		}
	case "scale":
		if !hasScale(in) {
			writeError(w, a, representation{}, notFoundPath(r.URL.Path))
			return
		}
		a.serveScale(w, r, rq, st)
		return
	case "eviction", "finalize":
		switch {
		case rq.subresource == "eviction" && in.gvk == corev1.SchemeGroupVersion.WithKind("Pod") && rq.namespace != "":
			a.serveEviction(w, r, rq)
		case rq.subresource == "finalize" && in.gvk == corev1.SchemeGroupVersion.WithKind("Namespace"):
			a.serveFinalize(w, r, rq, st)
		default:
			writeError(w, a, representation{}, notFoundPath(r.URL.Path))
		}
		return
	default:
		writeError(w, a, representation{}, notFoundPath(r.URL.Path))
		return
	}
	named := rq.name != ""
	if named && !in.clusterScoped && rq.namespace == "" {
		writeError(w, a, representation{}, notFoundPath(r.URL.Path))
		return
	}
	switch {
	case r.Method == http.MethodGet && !named:
		if rq.watchPath || isTrue(r.URL.Query().Get("watch")) {
			a.serveWatch(w, r, rq, st)
		} else {
			a.serveList(w, r, rq, st)
		}
	case r.Method == http.MethodGet:
		a.serveGet(w, r, rq, st)
	case r.Method == http.MethodPost && !named && !in.clusterScoped && rq.namespace == "":
		writeError(w, a, representation{}, methodNotAllowed(r.Method, r.URL.Path))
	case r.Method == http.MethodPost && !named:
		a.serveCreate(w, r, rq, st)
	case r.Method == http.MethodPut && named:
		a.serveUpdate(w, r, rq, st)
	case r.Method == http.MethodPatch && named:
		a.servePatch(w, r, rq, st)
	case r.Method == http.MethodDelete && named && rq.subresource == "":
		a.serveDelete(w, r, rq, st)
	case r.Method == http.MethodDelete && !named:
		a.serveDeleteCollection(w, r, rq, st)
	default:
		writeError(w, a, representation{}, methodNotAllowed(r.Method, r.URL.Path))
	}
}

// parse splits a resource path: [watch/][namespaces/<ns>/]<resource>[/<name>[/<subresource>]].
func (a *api) parse(gv schema.GroupVersion, segs []string) (request, *served, error) {
	rq := request{gv: gv}
	path := "/" + strings.Join(segs, "/")
	if len(segs) > 0 && segs[0] == "watch" {
		rq.watchPath, segs = true, segs[1:]
	}
	// namespaces/<ns>/<resource>..., but for namespaces/<name>/status and
	// /finalize, subresources of the core namespaces.
	if len(segs) >= 3 && segs[0] == "namespaces" && !(len(segs) == 3 && (segs[2] == "status" || segs[2] == "finalize")) {
		st, ok := a.stores[gv.WithResource(segs[2])]
		if !ok {
			return rq, nil, a.unserved(gv.WithResource(segs[2]))
		}
		if !st.in.clusterScoped {
			rq.namespace, segs = segs[1], segs[2:]
		}
	}
	if len(segs) == 0 || len(segs) > 3 || segs[0] == "" {
		return rq, nil, notFoundPath(path)
	}
	rq.resource = segs[0]
	if len(segs) > 1 {
		rq.name = segs[1]
	}
	if len(segs) > 2 {
		rq.subresource = segs[2]
	}
	st, ok := a.stores[gv.WithResource(rq.resource)]
	if !ok {
		return rq, nil, a.unserved(gv.WithResource(rq.resource))
	}
	return rq, st, nil
}

func isTrue(s string) bool {
	b, err := strconv.ParseBool(s)
	return err == nil && b
}

func notFoundPath(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: path}}},
	}}
}

func methodNotAllowed(method, path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Message: fmt.Sprintf("the server does not allow this method on the requested resource (%s %s)", method, path),
	}}
}

// writeError answers err as a metav1.Status, in rep if it is set (else
// JSON), with the status's HTTP code and, if it asks the client to wait,
// a Retry-After header.
func writeError(w http.ResponseWriter, a *api, rep representation, err error) {
	st := apiStatus(err)
	if d := st.Details; d != nil && d.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
	}
	rep.partial = false
	var body []byte
	if a != nil && rep.info.Serializer != nil {
		body, err = a.encodeBytes(rep, schema.GroupVersion{Version: "v1"}, &st)
	}
	if a == nil || rep.info.Serializer == nil || err != nil {
		rep.info.MediaType = mediaJSON
		body = statusJSON(st)
	}
	w.Header().Set("Content-Type", rep.info.MediaType)
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(body) // the client went away: nothing left to tell it
}

// statusJSON is the last resort of writeError: a Status in plain JSON.
func statusJSON(st metav1.Status) []byte {
	b, err := json.Marshal(st)
	if err != nil {
		return []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure"}`)
	}
	return b
}

// apiStatus is the metav1.Status of err: its own for an API error, an
// internal error's otherwise.
func apiStatus(err error) metav1.Status {
	var st metav1.Status
	var as apierrors.APIStatus
	if errors.As(err, &as) {
		st = as.Status()
	} else {
		st = apierrors.NewInternalError(err).ErrStatus
	}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	st.Kind, st.APIVersion = "Status", "v1"
	return st
}
