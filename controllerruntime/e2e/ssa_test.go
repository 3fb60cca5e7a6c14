//go:build e2e

package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// The server-side apply sequences: each sends the same requests to
// kube-apiserver v1.37.1 and to memcluster (set up as the bench sets it
// up), and compares every answer: the status code, and for an error its
// reason, message and causes, for a success the object (managedFields
// included) and whether the write stored a new version. What must
// differ is left out: uids, resourceVersions, creation and managedFields
// times (only whether an entry has a time is compared) and so the order
// of entries that the library sorts by time.

// ssaStep is one request of a sequence.
type ssaStep struct {
	do       string // apply, create, update, merge, json, smp, get, typed-apply
	resource string // "deployments" (default), "configmaps", "statefulsets" or "jobs"
	sub      string // "", "status" or "scale"
	manager  string // the fieldManager parameter, if any
	force    bool
	body     string                   // YAML for apply, create; JSON for patches; NAME is the sequence's object
	edit     func(obj map[string]any) // update: the object read back, edited
	ct       string                   // Content-Type, if not the verb's
	typed    func(name string) any    // typed-apply: an apply configuration
}

type ssaSequence struct {
	name  string
	steps []ssaStep
}

// outcome is what a step answered, normalised.
type outcome struct {
	Code    int
	Reason  string               `json:",omitempty"`
	Message string               `json:",omitempty"`
	Causes  []metav1.StatusCause `json:",omitempty"`
	Object  map[string]any       `json:",omitempty"`
	Wrote   bool                 // a new resourceVersion
}

func TestSSASideBySide(t *testing.T) {
	seqs := ssaSequences()
	if len(seqs) < 30 {
		t.Fatalf("%d sequences; the issue asks for at least 30", len(seqs))
	}
	ns := sideNamespace(t)
	matched := runSSASequences(t, newSideClients(t, sides(t), ns), ns, "ssa", seqs)
	t.Logf("%d of %d apply sequences give the same answers and objects (managedFields included) on kube-apiserver and memcluster", matched, len(seqs))
}

// newSideClients returns a client of each side, with namespace ns
// created on each.
func newSideClients(t *testing.T, ss []side, ns string) []*sideClient {
	t.Helper()
	clients := make([]*sideClient, len(ss))
	for i, s := range ss {
		clients[i] = newSideClient(t, s)
		if code, body := clients[i].raw(t, "POST", "/api/v1/namespaces", "", "application/json", []byte(`{"metadata":{"name":"`+ns+`"}}`)); code != http.StatusCreated {
			t.Fatalf("%s: create namespace: %d %s", s.name, code, body)
		}
	}
	return clients
}

// runSSASequences runs each sequence of seqs, as a subtest, on both
// sides (clients: kube-apiserver's, then memcluster's), on an object of
// namespace ns named prefix-<index>, compares the outcomes step by step,
// and returns how many sequences gave the same on both.
func runSSASequences(t *testing.T, clients []*sideClient, ns, prefix string, seqs []ssaSequence) int {
	t.Helper()
	matched := 0
	for i, seq := range seqs {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		ok := t.Run(seq.name, func(t *testing.T) {
			var got [2][]outcome
			for side, c := range clients {
				last := ""
				for _, st := range seq.steps {
					o, rv := c.run(t, ns, name, st, last)
					if rv != "" {
						last = rv
					}
					got[side] = append(got[side], o)
				}
			}
			for j, st := range seq.steps {
				if d := gocmp.Diff(got[0][j], got[1][j]); d != "" {
					t.Errorf("step %d (%s %s %s): kube-apiserver and memcluster differ (-kube-apiserver +memcluster):\n%s", j, st.do, st.resource, st.sub, d)
				}
			}
		})
		if ok {
			matched++
		}
	}
	return matched
}

// sideClient sends raw requests to one side.
type sideClient struct {
	side
	hc    *http.Client
	host  string
	typed *kubernetes.Clientset
}

const ssaUserAgent = "ssa-e2e/v0.0.0 (linux/amd64) kubernetes/none"

func newSideClient(t *testing.T, s side) *sideClient {
	t.Helper()
	cfg := rest.CopyConfig(s.cfg)
	cfg.UserAgent = ssaUserAgent
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &sideClient{side: s, hc: hc, host: strings.TrimSuffix(cfg.Host, "/"), typed: cs}
}

func (c *sideClient) raw(t *testing.T, method, path, query, contentType string, body []byte) (int, []byte) {
	t.Helper()
	u := c.host + path
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", ssaUserAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", c.name, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// run sends one step and returns its outcome and the resourceVersion of
// the object it answered, if any; last is the previous one.
func (c *sideClient) run(t *testing.T, ns, name string, st ssaStep, last string) (outcome, string) {
	t.Helper()
	res := cmp.Or(st.resource, "deployments")
	base := "/apis/apps/v1/namespaces/" + ns + "/" + res
	switch res {
	case "configmaps":
		base = "/api/v1/namespaces/" + ns + "/" + res
	case "jobs":
		base = "/apis/batch/v1/namespaces/" + ns + "/" + res
	default:
		// A custom resource: "group/version/plural", prefixed with
		// "cluster:" when cluster-scoped (see crResource).
		if gvr, clusterScoped := strings.CutPrefix(res, "cluster:"); strings.Count(gvr, "/") == 2 {
			gv, plural := gvr[:strings.LastIndex(gvr, "/")], gvr[strings.LastIndex(gvr, "/")+1:]
			base = "/apis/" + gv + "/namespaces/" + ns + "/" + plural
			if clusterScoped {
				base = "/apis/" + gv + "/" + plural
			}
		}
	}
	path := base + "/" + name
	if st.sub != "" {
		path += "/" + st.sub
	}
	q := url.Values{}
	if st.manager != "" {
		q.Set("fieldManager", st.manager)
	}
	if st.force {
		q.Set("force", "true")
	}
	query := q.Encode()
	body := []byte(strings.ReplaceAll(st.body, "NAME", name))
	var code int
	var answer []byte
	switch st.do {
	case "typed-apply":
		return c.typedApply(t, ns, name, st, last)
	case "apply":
		code, answer = c.raw(t, "PATCH", path, query, cmp.Or(st.ct, "application/apply-patch+yaml"), body)
	case "create":
		code, answer = c.raw(t, "POST", base, query, "application/json", yamlToJSON(t, body))
	case "merge", "json", "smp":
		ct := map[string]string{"merge": "application/merge-patch+json", "json": "application/json-patch+json", "smp": "application/strategic-merge-patch+json"}[st.do]
		code, answer = c.raw(t, "PATCH", path, query, cmp.Or(st.ct, ct), body)
	case "get":
		code, answer = c.raw(t, "GET", path, "", "", nil)
	case "update":
		gc, cur := c.raw(t, "GET", path, "", "", nil)
		if gc != http.StatusOK {
			t.Fatalf("%s: get %s for an update: %d %s", c.name, name, gc, cur)
		}
		var obj map[string]any
		if err := json.Unmarshal(cur, &obj); err != nil {
			t.Fatal(err)
		}
		st.edit(obj)
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		code, answer = c.raw(t, "PUT", path, query, "application/json", b)
	default:
		t.Fatalf("unknown step %q", st.do)
	}
	return decodeOutcome(t, c.name, code, answer, last)
}

func (c *sideClient) typedApply(t *testing.T, ns, name string, st ssaStep, last string) (outcome, string) {
	opts := metav1.ApplyOptions{FieldManager: st.manager, Force: st.force}
	var obj any
	var err error
	switch ac := st.typed(name).(type) {
	case *appsv1ac.DeploymentApplyConfiguration:
		ac.WithNamespace(ns)
		if st.sub == "status" {
			obj, err = c.typed.AppsV1().Deployments(ns).ApplyStatus(t.Context(), ac, opts)
		} else {
			obj, err = c.typed.AppsV1().Deployments(ns).Apply(t.Context(), ac, opts)
		}
	case *corev1ac.ConfigMapApplyConfiguration:
		ac.WithNamespace(ns)
		obj, err = c.typed.CoreV1().ConfigMaps(ns).Apply(t.Context(), ac, opts)
	default:
		t.Fatalf("typed-apply of %T", ac)
	}
	if err != nil {
		var st interface{ Status() metav1.Status }
		if !asStatus(err, &st) {
			t.Fatalf("%s: typed apply: %v", c.name, err)
		}
		s := st.Status()
		b, _ := json.Marshal(s)
		return decodeOutcome(t, c.name, int(s.Code), b, last)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	return decodeOutcome(t, c.name, http.StatusOK, b, last)
}

func asStatus(err error, target *interface{ Status() metav1.Status }) bool {
	for err != nil {
		if s, ok := err.(interface{ Status() metav1.Status }); ok {
			*target = s
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func decodeOutcome(t *testing.T, side string, code int, body []byte, last string) (outcome, string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: answer %d is not JSON: %v: %s", side, code, err, body)
	}
	o := outcome{Code: code}
	if m["kind"] == "Status" {
		var s metav1.Status
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatal(err)
		}
		o.Reason, o.Message = string(s.Reason), s.Message
		if s.Details != nil {
			o.Causes = s.Details.Causes
		}
		return o, ""
	}
	md, _ := m["metadata"].(map[string]any)
	rv, _ := md["resourceVersion"].(string)
	o.Wrote = rv != last
	o.Object = normalizeObject(m)
	return o, rv
}

// normalizeObject drops what must differ between two API servers: the
// uid (also where the server copied it, as into a Job's selector and
// labels), the resourceVersion, the creation and managedFields times.
func normalizeObject(m map[string]any) map[string]any {
	md, _ := m["metadata"].(map[string]any)
	if uid, _ := md["uid"].(string); uid != "" {
		b, err := json.Marshal(m)
		if err == nil {
			var out map[string]any
			if json.Unmarshal([]byte(strings.ReplaceAll(string(b), uid, "UID")), &out) == nil {
				m = out
				md, _ = m["metadata"].(map[string]any)
			}
		}
	}
	delete(md, "uid")
	delete(md, "resourceVersion")
	delete(md, "creationTimestamp")
	if mf, ok := md["managedFields"].([]any); ok {
		for _, e := range mf {
			if em, ok := e.(map[string]any); ok && em["time"] != nil {
				em["time"] = "(set)"
			}
		}
		slices.SortStableFunc(mf, func(a, b any) int {
			am, bm := a.(map[string]any), b.(map[string]any)
			key := func(m map[string]any) string {
				return fmt.Sprint(m["operation"], "|", m["manager"], "|", m["apiVersion"], "|", m["subresource"])
			}
			return strings.Compare(key(am), key(bm))
		})
	}
	return m
}

func yamlToJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// full returns a complete Deployment as a manager applies it (the
// selector, the template's labels and its container "app"), with more
// YAML under metadata, under spec, and under the container.
func full(meta, spec, container string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: NAME\n" + indent(meta, "  ") + "spec:\n" + indent(spec, "  ") +
		"  selector:\n    matchLabels: {app: NAME}\n  template:\n    metadata:\n      labels: {app: NAME}\n    spec:\n      containers:\n" +
		"      - name: app\n        image: nginx:1\n" + indent(container, "        ")
}

// depApply is the smallest complete Deployment.
var depApply = full("", "", "")

// part returns a partial Deployment: more YAML under metadata and spec.
func part(meta, spec string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: NAME\n" + indent(meta, "  ") + "spec:\n" + indent(spec, "  ")
}

// containerPart returns a partial Deployment with one container.
func containerPart(container string) string {
	return part("", "template:\n  spec:\n    containers:\n"+indent(container, "    "))
}

func indent(s, by string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func setPath(obj map[string]any, v any, path ...string) {
	for _, p := range path[:len(path)-1] {
		next, ok := obj[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[p] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = v
}

func ssaSequences() []ssaSequence {
	replicas := func(n int) string { return part("", fmt.Sprintf("replicas: %d\n", n)) }
	fullReplicas := func(n int) string { return full("", fmt.Sprintf("replicas: %d\n", n), "") }
	label := func(k, v string) string { return part(fmt.Sprintf("labels: {%s: %q}\n", k, v), "") }
	annotation := func(k, v string) string { return part(fmt.Sprintf("annotations: {%s: %q}\n", k, v), "") }
	apply := func(manager, body string) ssaStep { return ssaStep{do: "apply", manager: manager, body: body} }
	force := func(manager, body string) ssaStep {
		return ssaStep{do: "apply", manager: manager, body: body, force: true}
	}
	create := ssaStep{do: "create", manager: "creator", body: depApply}
	get := ssaStep{do: "get"}
	status := func(manager, body string) ssaStep {
		return ssaStep{do: "apply", sub: "status", manager: manager, body: body}
	}
	statusBody := func(s string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: NAME\nstatus:\n" + indent(s, "  ")
	}
	update := func(manager string, edit func(map[string]any)) ssaStep {
		return ssaStep{do: "update", manager: manager, edit: edit}
	}
	cm := func(data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\ndata:\n" + indent(data, "  ")
	}
	cmApply := func(manager, data string) ssaStep {
		return ssaStep{do: "apply", resource: "configmaps", manager: manager, body: cm(data)}
	}
	return []ssaSequence{
		{"apply creates", []ssaStep{apply("a", depApply), get}},
		{"apply twice changes nothing", []ssaStep{apply("a", depApply), apply("a", depApply)}},
		{"two managers on disjoint fields", []ssaStep{apply("a", depApply), apply("b", replicas(3)), apply("c", label("team", "x"))}},
		{"conflict on replicas", []ssaStep{apply("a", fullReplicas(2)), apply("b", replicas(3))}},
		{"conflicts with two managers", []ssaStep{apply("a", depApply), apply("b", part("labels: {x: \"1\"}\n", "replicas: 2\n")),
			apply("c", part("labels: {x: \"2\"}\n", "replicas: 4\n"))}},
		{"force takes over", []ssaStep{apply("a", fullReplicas(2)), force("b", replicas(3)), apply("a", fullReplicas(2)), get}},
		{"same value is shared", []ssaStep{apply("a", fullReplicas(2)), apply("b", replicas(2)), apply("a", depApply)}},
		{"a manager removes its field", []ssaStep{apply("a", full("labels: {x: \"1\", y: \"2\"}\n", "", "")), apply("a", full("labels: {x: \"1\"}\n", "", ""))}},
		{"shared field stays when one owner drops it", []ssaStep{apply("a", full("labels: {x: \"1\"}\n", "", "")), apply("b", label("x", "1")), apply("a", depApply)}},
		{"containers merge by name", []ssaStep{apply("a", depApply), apply("b", containerPart("- name: sidecar\n  image: busybox:1\n"))}},
		{"container image conflict", []ssaStep{apply("a", depApply), apply("b", containerPart("- name: app\n  image: nginx:2\n"))}},
		{"container removed by its manager", []ssaStep{apply("a", depApply), apply("b", containerPart("- name: sidecar\n  image: busybox:1\n")),
			apply("b", replicas(1))}},
		{"ports by containerPort and protocol", []ssaStep{apply("a", full("", "", "ports:\n- containerPort: 80\n")),
			apply("b", containerPart("- name: app\n  ports:\n  - containerPort: 80\n    protocol: UDP\n")),
			apply("c", containerPart("- name: app\n  ports:\n  - containerPort: 80\n    name: web\n")),
			apply("a", depApply)}},
		{"env by name", []ssaStep{apply("a", full("", "", "env:\n- {name: A, value: \"1\"}\n")),
			apply("b", containerPart("- name: app\n  env:\n  - {name: B, value: \"2\"}\n")),
			apply("b", containerPart("- name: app\n  env:\n  - {name: A, value: \"3\"}\n"))}},
		{"labels and annotations ownership", []ssaStep{apply("a", depApply), apply("b", annotation("note", "b")), apply("c", annotation("note", "c")),
			force("c", annotation("note", "c")), apply("b", replicas(1))}},
		{"apply after create", []ssaStep{create, apply("a", replicas(2)), force("a", replicas(2)), get}},
		{"apply the same value after create", []ssaStep{create, apply("a", replicas(1))}},
		{"update after apply", []ssaStep{apply("a", fullReplicas(2)),
			update("editor", func(o map[string]any) { setPath(o, int64(5), "spec", "replicas") }),
			apply("a", fullReplicas(2))}},
		{"update without a fieldManager", []ssaStep{apply("a", depApply), update("", func(o map[string]any) { setPath(o, "v", "metadata", "labels", "ua") })}},
		{"merge patch after apply", []ssaStep{apply("a", depApply), {do: "merge", manager: "patcher", body: `{"spec":{"replicas":4},"metadata":{"labels":{"p":"1"}}}`}}},
		{"json patch after apply", []ssaStep{apply("a", depApply), {do: "json", manager: "patcher", body: `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:3"}]`}}},
		{"strategic merge patch after apply", []ssaStep{apply("a", depApply), {do: "smp", body: `{"metadata":{"labels":{"s":"1"}},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:4"}]}}}}`}}},
		{"apply to status", []ssaStep{apply("a", depApply), status("ctrl", statusBody("replicas: 2\nconditions:\n- {type: Available, status: \"True\"}\n")), get}},
		{"spec apply ignores status", []ssaStep{apply("a", depApply+"status:\n  replicas: 7\n")}},
		{"status apply ignores spec", []ssaStep{apply("a", depApply), status("ctrl", fullReplicas(5)+"status:\n  replicas: 1\n")}},
		{"status conflict between managers", []ssaStep{apply("a", depApply), status("c1", statusBody("replicas: 2\n")), status("c2", statusBody("replicas: 3\n")),
			{do: "apply", sub: "status", manager: "c2", force: true, body: statusBody("replicas: 3\n")}}},
		{"controller-free status write", []ssaStep{apply("a", depApply),
			update("kube-controller-manager", func(o map[string]any) {
				setPath(o, "1", "metadata", "annotations", "deployment.kubernetes.io/revision")
			}),
			{do: "update", sub: "status", manager: "kube-controller-manager", edit: func(o map[string]any) {
				setPath(o, int64(1), "status", "observedGeneration")
				setPath(o, int64(1), "status", "replicas")
				setPath(o, []any{map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}}, "status", "conditions")
			}}, get}},
		{"status patch keeps the spec owners", []ssaStep{apply("a", fullReplicas(2)),
			{do: "merge", sub: "status", manager: "st", body: `{"status":{"replicas":2},"spec":{"replicas":9},"metadata":{"labels":{"l":"1"},"annotations":{"n":"1"}}}`}}},
		{"status of a missing object", []ssaStep{status("ctrl", statusBody("replicas: 2\n"))}},
		{"apply without a fieldManager", []ssaStep{{do: "apply", body: depApply}}},
		{"force on a merge patch", []ssaStep{apply("a", depApply), {do: "merge", manager: "p", force: true, body: `{"spec":{"replicas":2}}`}}},
		{"apply of another version", []ssaStep{apply("a", strings.Replace(depApply, "apps/v1", "apps/v1beta1", 1))}},
		{"apply of another kind", []ssaStep{apply("a", strings.Replace(depApply, "kind: Deployment", "kind: StatefulSet", 1))}},
		{"apply with managedFields", []ssaStep{apply("a", full("managedFields:\n- {manager: x, operation: Apply}\n", "", ""))}},
		{"apply with another name", []ssaStep{apply("a", strings.Replace(depApply, "name: NAME", "name: other", 1))}},
		{"apply with an unknown field", []ssaStep{apply("a", full("", "bogus: 1\n", ""))}},
		{"apply with duplicate containers", []ssaStep{apply("a", depApply), apply("b", containerPart("- {name: side, image: a}\n- {name: side, image: b}\n"))}},
		{"apply creating with a uid", []ssaStep{apply("a", full("uid: 5e0f4b43-0b58-4c1c-9d44-8b8d00000000\n", "", ""))}},
		{"apply that is not an object", []ssaStep{apply("a", "- a\n- b\n")}},
		{"apply as CBOR", []ssaStep{apply("a", depApply), {do: "apply", manager: "a", ct: "application/apply-patch+cbor", body: depApply},
			{do: "apply", manager: "a", ct: "application/x-unknown", body: depApply}}},
		{"reset managedFields with [{}]", []ssaStep{apply("a", depApply), {do: "merge", manager: "m", body: `{"metadata":{"managedFields":[{}]}}`}, apply("b", replicas(1))}},
		{"managedFields set to []", []ssaStep{apply("a", depApply), {do: "merge", manager: "m", body: `{"metadata":{"managedFields":[]}}`}}},
		{"managedFields replaced by an update", []ssaStep{apply("a", depApply), apply("b", replicas(2)),
			update("u", func(o map[string]any) {
				mf := o["metadata"].(map[string]any)["managedFields"].([]any)
				for _, e := range mf {
					if e.(map[string]any)["manager"] == "b" {
						e.(map[string]any)["manager"] = "renamed"
					}
				}
			}), force("c", replicas(3))}},
		{"update with managedFields [] and [{}]", []ssaStep{apply("a", depApply),
			update("u", func(o map[string]any) { setPath(o, []any{}, "metadata", "managedFields") }),
			update("u", func(o map[string]any) {
				setPath(o, []any{map[string]any{}}, "metadata", "managedFields")
				setPath(o, "1", "metadata", "labels", "l")
			}), get}},
		{"update entries of one manager merge", []ssaStep{create,
			update("editor", func(o map[string]any) { setPath(o, "1", "metadata", "labels", "one") }),
			update("editor", func(o map[string]any) { setPath(o, "2", "metadata", "labels", "two") })}},
		{"eleven update managers", func() []ssaStep {
			steps := []ssaStep{create}
			for i := range 11 {
				steps = append(steps, update(fmt.Sprintf("m%02d", i), func(o map[string]any) { setPath(o, "v", "metadata", "annotations", fmt.Sprintf("k%02d", i)) }))
			}
			return steps
		}()},
		{"finalizers as a set", []ssaStep{apply("a", full("finalizers: [example.com/a]\n", "", "")), apply("b", part("finalizers: [example.com/b]\n", "")),
			apply("a", depApply), {do: "merge", manager: "cleanup", body: `{"metadata":{"finalizers":null}}`}}},
		{"ConfigMap data keys", []ssaStep{cmApply("a", "x: \"1\"\n"), cmApply("b", "z: \"2\"\n"), cmApply("b", "x: \"3\"\n"),
			{do: "apply", resource: "configmaps", manager: "b", force: true, body: cm("x: \"3\"\n")}}},
		{"ConfigMap created then applied", []ssaStep{{do: "create", resource: "configmaps", body: cm("x: \"1\"\n")}, cmApply("a", "x: \"2\"\n")}},
		{"typed client-go apply", []ssaStep{{do: "typed-apply", manager: "typed", typed: func(name string) any {
			return appsv1ac.Deployment(name, "").WithSpec(appsv1ac.DeploymentSpec().
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": name})).
				WithTemplate(corev1ac.PodTemplateSpec().WithLabels(map[string]string{"app": name}).
					WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("app").WithImage("nginx:1")))))
		}}, {do: "typed-apply", manager: "other", typed: func(name string) any {
			return appsv1ac.Deployment(name, "").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3))
		}}}},
		{"typed client-go status apply", []ssaStep{apply("a", depApply), {do: "typed-apply", sub: "status", manager: "ctrl", typed: func(name string) any {
			return appsv1ac.Deployment(name, "").WithStatus(appsv1ac.DeploymentStatus().WithReplicas(1).WithObservedGeneration(1))
		}}}},
		{"scale by update and merge patch", []ssaStep{apply("a", fullReplicas(2)),
			{do: "update", sub: "scale", manager: "scaler", edit: func(o map[string]any) { setPath(o, int64(4), "spec", "replicas") }}, get,
			{do: "merge", sub: "scale", body: `{"spec":{"replicas":5}}`}, get, apply("a", fullReplicas(2))}},
		{"scale by apply", []ssaStep{apply("a", fullReplicas(2)),
			{do: "apply", sub: "scale", manager: "hpa", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\nspec: {replicas: 3}\n"},
			{do: "apply", sub: "scale", manager: "hpa", force: true, body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\nspec: {replicas: 3}\n"}, get,
			{do: "apply", sub: "scale", manager: "hpa", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\nspec: {replicas: 3}\n"},
			{do: "apply", sub: "scale", manager: "hpa", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\n"}, get}},
		{"scale update when nobody owns replicas", []ssaStep{apply("a", depApply),
			{do: "update", sub: "scale", manager: "hpa", edit: func(o map[string]any) { setPath(o, int64(3), "spec", "replicas") }}, get,
			{do: "merge", sub: "scale", manager: "kubectl", body: `{"spec":{"replicas":4}}`}, get}},
		{"scale apply when nobody owns replicas", []ssaStep{apply("a", depApply),
			{do: "apply", sub: "scale", manager: "hpa", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\nspec: {replicas: 1}\n"},
			{do: "apply", sub: "scale", manager: "hpa", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\nspec: {replicas: 3}\n"},
			{do: "apply", sub: "scale", manager: "hpa", force: true, body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\nspec: {replicas: 3}\n"}, get}},
		{"scale apply of another kind", []ssaStep{apply("a", depApply), {do: "apply", sub: "scale", manager: "hpa", body: depApply}}},
		{"apply after the fields were reset", []ssaStep{create, {do: "merge", manager: "m", body: `{"metadata":{"managedFields":[{}]}}`}, apply("a", replicas(1)), get}},
		// The kinds operators own, with client-go's schemas for them.
		{"StatefulSet apply, conflict, force", []ssaStep{stsApply("a", sts("replicas: 2\n", "")), stsApply("b", stsPart("replicas: 3\n")),
			{do: "apply", resource: "statefulsets", manager: "b", force: true, body: stsPart("replicas: 3\n")}, stsApply("a", sts("", "")),
			{do: "get", resource: "statefulsets"}}},
		{"StatefulSet containers and status", []ssaStep{stsApply("a", sts("", "")),
			stsApply("b", stsPart("template:\n  spec:\n    containers:\n    - name: sidecar\n      image: busybox:1\n")),
			{do: "apply", resource: "statefulsets", sub: "status", manager: "ctrl", body: stsStatus("replicas: 1\nreadyReplicas: 1\navailableReplicas: 1\nobservedGeneration: 2\n")},
			{do: "update", resource: "statefulsets", manager: "editor", edit: func(o map[string]any) { setPath(o, "x", "metadata", "labels", "edited") }},
			{do: "merge", resource: "statefulsets", manager: "patcher", body: `{"spec":{"minReadySeconds":5}}`}}},
		{"StatefulSet scale", []ssaStep{stsApply("a", sts("replicas: 2\n", "")),
			{do: "apply", resource: "statefulsets", sub: "scale", manager: "hpa", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\nspec: {replicas: 4}\n"},
			{do: "apply", resource: "statefulsets", sub: "scale", manager: "hpa", force: true, body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\nspec: {replicas: 4}\n"},
			{do: "merge", resource: "statefulsets", sub: "scale", manager: "scaler", body: `{"spec":{"replicas":5}}`},
			{do: "apply", resource: "statefulsets", sub: "scale", manager: "hpa", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\n"},
			{do: "get", resource: "statefulsets"}}},
		{"StatefulSet scale apply then removed", []ssaStep{stsApply("a", sts("", "")),
			{do: "apply", resource: "statefulsets", sub: "scale", manager: "hpa", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\nspec: {replicas: 4}\n"},
			{do: "apply", resource: "statefulsets", sub: "scale", manager: "hpa", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: NAME}\n"},
			{do: "get", resource: "statefulsets"}}},
		{"Job apply, two managers, status", []ssaStep{jobApply("a", job("")), jobApply("b", jobPart("parallelism: 2\n")),
			jobApply("c", jobPart("parallelism: 3\n")),
			{do: "apply", resource: "jobs", sub: "status", manager: "ctrl", body: jobStatus("active: 1\nready: 0\nterminating: 0\n")},
			{do: "merge", resource: "jobs", manager: "suspender", body: `{"spec":{"suspend":true}}`}, {do: "get", resource: "jobs"}}},
		{"Job field a manager stops applying", []ssaStep{jobApply("a", job("backoffLimit: 2\nactiveDeadlineSeconds: 600\n")),
			jobApply("b", jobPart("backoffLimit: 2\n")), jobApply("a", job("")), jobApply("b", jobPart("completions: 1\n")), {do: "get", resource: "jobs"}}},
		{"Job created then applied", []ssaStep{{do: "create", resource: "jobs", manager: "creator", body: job("")}, jobApply("a", jobPart("ttlSecondsAfterFinished: 60\n")),
			{do: "get", resource: "jobs"}}},
	}
}

// sts returns a complete StatefulSet as a manager applies it, with more
// YAML under spec and under its container.
func sts(spec, container string) string {
	return "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: NAME\nspec:\n  serviceName: NAME\n" + indent(spec, "  ") +
		"  selector:\n    matchLabels: {app: NAME}\n  template:\n    metadata:\n      labels: {app: NAME}\n    spec:\n      containers:\n" +
		"      - name: app\n        image: nginx:1\n" + indent(container, "        ")
}

// stsPart returns a partial StatefulSet: more YAML under spec.
func stsPart(spec string) string {
	return "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: NAME\nspec:\n" + indent(spec, "  ")
}

func stsStatus(status string) string {
	return "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: NAME\nstatus:\n" + indent(status, "  ")
}

func stsApply(manager, body string) ssaStep {
	return ssaStep{do: "apply", resource: "statefulsets", manager: manager, body: body}
}

// job returns a complete Job as a manager applies it, with more YAML
// under spec.
func job(spec string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: NAME\nspec:\n" + indent(spec, "  ") +
		"  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: app\n        image: busybox:1\n"
}

// jobPart returns a partial Job: more YAML under spec.
func jobPart(spec string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: NAME\nspec:\n" + indent(spec, "  ")
}

func jobStatus(status string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: NAME\nstatus:\n" + indent(status, "  ")
}

func jobApply(manager, body string) ssaStep {
	return ssaStep{do: "apply", resource: "jobs", manager: manager, body: body}
}
