package kube

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Request identifies a kind of API request: a verb as the API server's
// audit log and apiserver_request_total name it (create, update, patch,
// delete, deletecollection, get, list, watch) and a resource, with its
// subresource after a slash ("deployments/status").
type Request struct {
	Verb     string
	Resource string
}

// IsWrite reports whether r changes state on the server.
func (r Request) IsWrite() bool {
	switch r.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// String returns e.g. "update deployments/status".
func (r Request) String() string { return r.Verb + " " + r.Resource }

// WriteCounter counts the requests that pass through it by [Request]. Set
// its Wrap method as a rest.Config's WrapTransport. Its zero value is ready
// to use; it is safe for concurrent use.
type WriteCounter struct {
	mu        sync.Mutex
	counts    map[Request]int
	conflicts map[Request]int
}

// Wrap returns a RoundTripper that counts each request and passes it to
// next.
func (w *WriteCounter) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r := Classify(req)
		w.Add(r)
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusConflict {
			w.mu.Lock()
			if w.conflicts == nil {
				w.conflicts = make(map[Request]int)
			}
			w.conflicts[r]++
			w.mu.Unlock()
		}
		return resp, err
	})
}

// Conflicts returns how many requests of each kind were answered 409
// Conflict (a stale resourceVersion, or an object that already exists).
func (w *WriteCounter) Conflicts() map[Request]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[Request]int, len(w.conflicts))
	for k, v := range w.conflicts {
		out[k] = v
	}
	return out
}

// Add counts one request r.
func (w *WriteCounter) Add(r Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts == nil {
		w.counts = make(map[Request]int)
	}
	w.counts[r]++
}

// Counts returns a copy of the counts so far.
func (w *WriteCounter) Counts() map[Request]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[Request]int, len(w.counts))
	for k, v := range w.counts {
		out[k] = v
	}
	return out
}

// Writes returns the number of write requests so far.
func (w *WriteCounter) Writes() int {
	n := 0
	for r, c := range w.Counts() {
		if r.IsWrite() {
			n += c
		}
	}
	return n
}

// SortedRequests returns the keys of counts in a stable order: by
// resource, then verb.
func SortedRequests(counts map[Request]int) []Request {
	keys := make([]Request, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Request) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
	return keys
}

// Classify names the verb and resource of an API request from its method
// and path (/api/v1/namespaces/ns/pods/name/status,
// /apis/apps/v1/deployments, …). Paths outside /api and /apis have resource
// "" and the lower-case method as verb.
func Classify(req *http.Request) Request {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return Request{Verb: strings.ToLower(req.Method)}
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) != 2 {
		rest = rest[2:] // a namespaced resource, not the namespace itself
	}
	var resource, name, sub string
	if len(rest) > 0 {
		resource = rest[0]
	}
	if len(rest) > 1 {
		name = rest[1]
	}
	if len(rest) > 2 {
		sub = rest[2]
		resource += "/" + sub
	}
	verb := strings.ToLower(req.Method)
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "watch"
		case name == "":
			verb = "list"
		default:
			verb = "get"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		if name == "" {
			verb = "deletecollection"
		} else {
			verb = "delete"
		}
	}
	return Request{Verb: verb, Resource: resource}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
