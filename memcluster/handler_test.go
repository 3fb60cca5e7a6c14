package memcluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHandlerDiscovery(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	addWidgets(t, c)
	rc := newRESTClient(t, c)
	resources := func(body []byte) string {
		var l metav1.APIResourceList
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range l.APIResources {
			names = append(names, fmt.Sprintf("%s(%s,ns=%t)", r.Name, r.Kind, r.Namespaced))
		}
		return l.GroupVersion + ": " + strings.Join(names, " ")
	}
	tests := []struct {
		path string
		want string
	}{
		{"/api", `200 {"kind":"APIVersions","apiVersion":"v1","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"memcluster"}]}`},
		{"/apis", `200 {"kind":"APIGroupList","apiVersion":"v1","groups":[` +
			`{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},` +
			`{"name":"policy","versions":[{"groupVersion":"policy/v1","version":"v1"}],"preferredVersion":{"groupVersion":"policy/v1","version":"v1"}},` +
			`{"name":"events.k8s.io","versions":[{"groupVersion":"events.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"events.k8s.io/v1","version":"v1"}},` +
			`{"name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"coordination.k8s.io/v1","version":"v1"}},` +
			`{"name":"example.com","versions":[{"groupVersion":"example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}}]}`},
		{"/apis/example.com", `200 {"kind":"APIGroup","apiVersion":"v1","name":"example.com","versions":[{"groupVersion":"example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}}`},
		{"/api/v1", "200 v1: pods(Pod,ns=true) pods/status(Pod,ns=true) pods/eviction(Eviction,ns=true) " +
			"namespaces(Namespace,ns=false) namespaces/status(Namespace,ns=false) namespaces/finalize(Namespace,ns=false) " +
			"services(Service,ns=true) services/status(Service,ns=true) secrets(Secret,ns=true) configmaps(ConfigMap,ns=true) " +
			"serviceaccounts(ServiceAccount,ns=true) events(Event,ns=true)"},
		{"/apis/apps/v1", "200 apps/v1: replicasets(ReplicaSet,ns=true) replicasets/status(ReplicaSet,ns=true) replicasets/scale(Scale,ns=true) " +
			"deployments(Deployment,ns=true) deployments/status(Deployment,ns=true) deployments/scale(Scale,ns=true)"},
		{"/apis/example.com/v1", "200 example.com/v1: widgets(Widget,ns=true) widgets/status(Widget,ns=true)"},
		{"/apis/example.com/v2", "404 Status NotFound"},
		{"/apis/nope", "404 Status NotFound"},
		{"/nope", "404 Status NotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := rc.do(req{method: http.MethodGet, path: tt.path})
			var got string
			switch {
			case resp.StatusCode != http.StatusOK:
				got = summary(resp.StatusCode, body)
			case strings.Count(tt.path, "/") == 2 && strings.HasPrefix(tt.path, "/api/") || strings.Count(tt.path, "/") == 3:
				got = fmt.Sprintf("%d %s", resp.StatusCode, resources(body))
			default:
				got = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
			}
			if got != tt.want {
				t.Errorf("GET %s =\n%s\nwant\n%s", tt.path, got, tt.want)
			}
		})
	}
}

// TestHandlerCRUD runs a script of requests against one Deployment and
// compares a one-line summary of every answer.
func TestHandlerCRUD(t *testing.T) {
	c, _ := newTestCluster(t)
	rc := newRESTClient(t, c)
	const coll = "/apis/apps/v1/namespaces/ns/deployments"
	const web = coll + "/web"
	put := func(rv string, replicas int) string {
		var d map[string]any
		if err := json.Unmarshal([]byte(deploymentJSON), &d); err != nil {
			t.Fatal(err)
		}
		d["metadata"].(map[string]any)["resourceVersion"] = rv
		d["spec"].(map[string]any)["replicas"] = replicas
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	steps := []struct {
		name string
		req  req
		want string
	}{
		{"create", req{method: "POST", path: coll, body: deploymentJSON}, "201 Deployment web rv=2 gen=1"},
		{"create again", req{method: "POST", path: coll, body: deploymentJSON}, "409 Status AlreadyExists"},
		{"create in another namespace than the URL's", req{method: "POST", path: "/apis/apps/v1/namespaces/other/deployments",
			body: strings.Replace(deploymentJSON, `"name":"web",`, `"name":"web","namespace":"ns",`, 1)}, "400 Status BadRequest"},
		{"create without a selector", req{method: "POST", path: coll, body: `{"metadata":{"name":"bad"},"spec":{"template":{"spec":{"containers":[{"name":"a","image":"b"}]}}}}`}, "422 Status Invalid"},
		{"create a Pod at the Deployments", req{method: "POST", path: coll, body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`}, "400 Status BadRequest"},
		{"create without a namespace", req{method: "POST", path: "/apis/apps/v1/deployments", body: deploymentJSON}, "405 Status MethodNotAllowed"},
		{"create with an empty body", req{method: "POST", path: coll}, "400 Status BadRequest"},
		{"create a dry run", req{method: "POST", path: coll + "?dryRun=All", body: deploymentJSON}, "400 Status BadRequest"},
		{"get", req{method: "GET", path: web}, "200 Deployment web rv=2 gen=1"},
		{"get as YAML", req{method: "GET", path: web, accept: "application/yaml"}, "200 YAML"},
		{"get metadata only", req{method: "GET", path: web, accept: "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"}, "200 PartialObjectMetadata web rv=2 gen=1"},
		{"get as a Table", req{method: "GET", path: web, accept: "application/json;as=Table;g=meta.k8s.io;v=v1"}, "406 Status NotAcceptable"},
		{"get a missing one", req{method: "GET", path: coll + "/nope"}, "404 Status NotFound"},
		{"update", req{method: "PUT", path: web, body: put("2", 3)}, "200 Deployment web rv=3 gen=2"},
		{"update from a stale read", req{method: "PUT", path: web, body: put("1", 4)}, "409 Status Conflict"},
		{"update another name", req{method: "PUT", path: coll + "/other", body: put("2", 4)}, "400 Status BadRequest"},
		{"merge patch of the spec", req{method: "PATCH", path: web, contentType: "application/merge-patch+json", body: `{"spec":{"replicas":5}}`}, "200 Deployment web rv=4 gen=3"},
		{"merge patch of a label", req{method: "PATCH", path: web, contentType: "application/merge-patch+json", body: `{"metadata":{"labels":{"x":"y"}}}`}, "200 Deployment web rv=5 gen=3"},
		{"strategic merge patch", req{method: "PATCH", path: web, contentType: "application/strategic-merge-patch+json",
			body: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}}}`}, "200 Deployment web rv=6 gen=4"},
		{"JSON patch whose test fails", req{method: "PATCH", path: web, contentType: "application/json-patch+json",
			body: `[{"op":"test","path":"/spec/replicas","value":1}]`}, "422 Status Invalid"},
		{"JSON patch", req{method: "PATCH", path: web, contentType: "application/json-patch+json",
			body: `[{"op":"test","path":"/spec/replicas","value":5},{"op":"replace","path":"/spec/replicas","value":6}]`}, "200 Deployment web rv=7 gen=5"},
		{"patch with a stale resourceVersion", req{method: "PATCH", path: web, contentType: "application/merge-patch+json",
			body: `{"metadata":{"resourceVersion":"2"},"spec":{"replicas":1}}`}, "409 Status Conflict"},
		{"server-side apply", req{method: "PATCH", path: web + "?fieldManager=me", contentType: "application/apply-patch+yaml", body: "spec: {}"}, "415 Status UnsupportedMediaType"},
		{"status update", req{method: "PUT", path: web + "/status", body: `{"metadata":{"name":"web","resourceVersion":"7"},"status":{"replicas":2}}`}, "200 Deployment web rv=8 gen=5"},
		{"status patch", req{method: "PATCH", path: web + "/status", contentType: "application/merge-patch+json", body: `{"status":{"observedGeneration":5}}`}, "200 Deployment web rv=9 gen=5"},
		{"get the scale", req{method: "GET", path: web + "/scale"}, "200 Scale web rv=9 gen=0"},
		{"update the scale", req{method: "PUT", path: web + "/scale", body: `{"metadata":{"name":"web"},"spec":{"replicas":2}}`}, "200 Scale web rv=10 gen=0"},
		{"patch the scale", req{method: "PATCH", path: web + "/scale", contentType: "application/merge-patch+json", body: `{"spec":{"replicas":3}}`}, "200 Scale web rv=11 gen=0"},
		{"a subresource that does not exist", req{method: "GET", path: web + "/log"}, "404 Status NotFound"},
		{"list by label", req{method: "GET", path: coll + "?labelSelector=tier%3Dfront"}, "200 DeploymentList items=1"},
		{"list by another label", req{method: "GET", path: coll + "?labelSelector=tier%3Dback"}, "200 DeploymentList items=0"},
		{"list by name", req{method: "GET", path: "/apis/apps/v1/deployments?fieldSelector=metadata.name%3Dweb"}, "200 DeploymentList items=1"},
		{"list by an unsupported field", req{method: "GET", path: coll + "?fieldSelector=spec.replicas%3D3"}, "400 Status BadRequest"},
		{"list with a limit", req{method: "GET", path: coll + "?limit=1"}, "200 DeploymentList items=1"},
		{"list at a future version", req{method: "GET", path: coll + "?resourceVersion=99"}, "504 Status Timeout"},
		{"list at an old exact version (from the history)", req{method: "GET", path: coll + "?resourceVersion=2&resourceVersionMatch=Exact"}, "200 DeploymentList items=1"},
		{"list with a bad continue token", req{method: "GET", path: coll + "?limit=1&continue=xyz"}, "400 Status BadRequest"},
		{"list with continue and a resourceVersionMatch", req{method: "GET", path: coll + "?resourceVersionMatch=Exact&resourceVersion=2&continue=xyz"}, "422 Status Invalid"},
		{"delete with a wrong uid", req{method: "DELETE", path: web, body: `{"preconditions":{"uid":"x"}}`}, "409 Status Conflict"},
		{"delete", req{method: "DELETE", path: web, body: `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`}, "200 Status Success"},
		{"get after delete", req{method: "GET", path: web}, "404 Status NotFound"},
		{"delete a missing one", req{method: "DELETE", path: web}, "404 Status NotFound"},
		{"an unknown resource", req{method: "GET", path: "/apis/apps/v1/namespaces/ns/widgets"}, "404 Status NotFound"},
	}
	for _, st := range steps {
		resp, body := rc.do(st.req)
		got := summary(resp.StatusCode, body)
		if st.req.accept == "application/yaml" && strings.HasPrefix(got, "200 undecodable") && strings.Contains(string(body), "kind: Deployment") {
			continue // YAML, not JSON
		}
		if got != st.want {
			t.Errorf("%s: %s %s = %s; want %s", st.name, st.req.method, st.req.path, got, st.want)
		}
	}
}

func TestHandlerDeleteCollectionAndGraceful(t *testing.T) {
	c, _ := newTestCluster(t)
	rc := newRESTClient(t, c)
	for _, name := range []string{"a", "b", "c"} {
		p := pod(name, "", "")
		if name == "c" {
			p.Labels = map[string]string{"app": "other"}
		}
		must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
	}
	bound := pod("bound", "", "")
	bound.Spec.NodeName = "node-1"
	must(c.Pods("ns").Create(ctxT(t), bound, metav1.CreateOptions{}))(t)

	var got []string
	for _, r := range []req{
		{method: "DELETE", path: "/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb%2Cnone%21%3Dx&fieldSelector=metadata.name%21%3Dbound"},
		{method: "GET", path: "/api/v1/namespaces/ns/pods"},
		// A bound pod is deleted gracefully: the answer is the pod, now terminating.
		{method: "DELETE", path: "/api/v1/namespaces/ns/pods/bound?gracePeriodSeconds=30"},
		{method: "GET", path: "/api/v1/namespaces/ns/pods/bound"},
	} {
		resp, body := rc.do(r)
		got = append(got, summary(resp.StatusCode, body))
	}
	want := []string{
		"200 Status Success",
		"200 PodList items=2",
		// Each pod of the collection was written with its deletionTimestamp, then deleted.
		"200 Pod bound rv=10 gen=2",
		"200 Pod bound rv=10 gen=2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers mismatch (-want +got):\n%s", diff)
	}
}

func TestHandlerFaults(t *testing.T) {
	tests := []struct {
		name       string
		rule       FaultRule
		req        req
		want       string
		retryAfter string
	}{
		{"429 on list", FaultRule{Verb: "list", Rate: 1, Reason: metav1.StatusReasonTooManyRequests}, req{method: "GET", path: "/api/v1/pods"}, "429 Status TooManyRequests", "1"},
		{"500 on create", FaultRule{Verb: "create", Rate: 1, Reason: metav1.StatusReasonInternalError}, req{method: "POST", path: "/api/v1/namespaces/ns/pods",
			body: `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"b"}]}}`}, "500 Status InternalError", ""},
		{"503 on get", FaultRule{Verb: "get", Resource: "pods", Rate: 1, Reason: metav1.StatusReasonServiceUnavailable}, req{method: "GET", path: "/api/v1/namespaces/ns/pods/a"}, "503 Status ServiceUnavailable", ""},
		{"server timeout on watch", FaultRule{Verb: "watch", Rate: 1, Reason: metav1.StatusReasonServerTimeout}, req{method: "GET", path: "/api/v1/pods?watch=true"}, "500 Status ServerTimeout", "1"},
		{"409 on update/status", FaultRule{Verb: "update/status", Rate: 1, Reason: metav1.StatusReasonConflict}, req{method: "PUT", path: "/api/v1/namespaces/ns/pods/a/status",
			body: `{"metadata":{"name":"a"},"status":{"phase":"Running"}}`}, "409 Status Conflict", ""},
		{"409 on delete after the write", FaultRule{Verb: "delete", Rate: 1, Reason: metav1.StatusReasonConflict, AfterWrite: true}, req{method: "DELETE", path: "/api/v1/namespaces/ns/pods/a"}, "409 Status Conflict", ""},
		{"other resources untouched", FaultRule{Resource: "replicasets", Rate: 1}, req{method: "GET", path: "/api/v1/namespaces/ns/pods/a"}, "200 Pod a rv=2 gen=1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCluster(t)
			must(c.Pods("ns").Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
			c.SetFaults(Faults{Rules: []FaultRule{tt.rule}})
			resp, body := newRESTClient(t, c).do(tt.req)
			if got := summary(resp.StatusCode, body); got != tt.want {
				t.Errorf("%s %s = %s; want %s", tt.req.method, tt.req.path, got, tt.want)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q; want %q", got, tt.retryAfter)
			}
		})
	}
	// A fault after the write: the client sees an error, the delete happened.
	c, _ := newTestCluster(t)
	must(c.Pods("ns").Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
	c.SetFaults(Faults{Rules: []FaultRule{{Verb: "delete", Rate: 1, Reason: metav1.StatusReasonInternalError, AfterWrite: true}}})
	rc := newRESTClient(t, c)
	resp, body := rc.do(req{method: "DELETE", path: "/api/v1/namespaces/ns/pods/a"})
	c.SetFaults(Faults{})
	resp2, body2 := rc.do(req{method: "GET", path: "/api/v1/namespaces/ns/pods/a"})
	if got := []string{summary(resp.StatusCode, body), summary(resp2.StatusCode, body2)}; !cmp.Equal(got, []string{"500 Status InternalError", "404 Status NotFound"}) {
		t.Errorf("delete with a fault after the write, then get = %v", got)
	}
}

// Two kinds with one resource name cannot both be served: the handler
// says so instead of serving one of them.
func TestHandlerDuplicateResource(t *testing.T) {
	c, _ := newTestCluster(t)
	addWidgets(t, c)
	k, err := KindFor(widgetScheme(t), &widget{}, KindOptions{GVK: widgetGV.WithKind("Widget")})
	if err != nil {
		t.Fatal(err)
	}
	k.GVK.Kind = "Gizmo" // another kind, stored as "widgets" too
	NewResource(c, k)
	resp, body := newRESTClient(t, c).do(req{method: "GET", path: "/api/v1/pods"})
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "cannot serve both") {
		t.Errorf("GET = %d %s; want 500 naming the two kinds", resp.StatusCode, body)
	}
}

// A kind without a list type (a hand-made Kind without NewList) is listed
// in JSON, even to a client that prefers protobuf.
func TestHandlerListWithoutListType(t *testing.T) {
	c, _ := newTestCluster(t)
	bare := NewResource(c, Kind[*widget]{GVK: widgetGV.WithKind("Bare"), Resource: "bares", New: func() *widget { return &widget{} }})
	must(bare.Namespace("ns").Create(ctxT(t), &widget{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}))(t)
	resp, body := newRESTClient(t, c).do(req{method: "GET", path: "/apis/example.com/v1/bares", accept: "application/vnd.kubernetes.protobuf,application/json"})
	got := fmt.Sprintf("%s %s", resp.Header.Get("Content-Type"), summary(resp.StatusCode, body))
	if want := "application/json 200 BareList items=1"; got != want {
		t.Errorf("list = %s; want %s", got, want)
	}
	var l struct {
		Items []struct{ Kind, APIVersion string }
	}
	if err := json.Unmarshal(body, &l); err != nil || len(l.Items) != 1 || l.Items[0].Kind != "Bare" || l.Items[0].APIVersion != "example.com/v1" {
		t.Errorf("items = %+v, %v; want one Bare", l.Items, err)
	}
}
