package memcluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// A builtinCase exercises one kind of AddBuiltinKinds through the REST
// API: create (and the fields the server sets), a status write, an
// update, an update kube-apiserver refuses, a create it refuses, and its
// discovery entry. The expected values were checked against
// kube-apiserver v1.37.1 (controllerruntime/e2e's TestKindsSideBySide).
type builtinCase struct {
	kind, gv, resource string
	cluster            bool
	obj                string            // a valid object, named "x"
	want               map[string]string // path → JSON value in the created object ("" absent)
	status             string            // a status to write
	wantStatus         map[string]string // path → JSON value after the status write
	update             string            // merge patch of a valid update
	generation         int64             // the generation after it (0: unchanged from create)
	immutable          string            // merge patch kube-apiserver refuses
	invalid            string            // an object kube-apiserver refuses
	causes             []string          // "<field>: <type>" of the refusals, immutable's then invalid's
	shortNames         []string
	categories         []string
	subresources       []string
}

const (
	testTemplate    = `{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`
	testJobTemplate = `{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}`
	testSelector    = `{"matchLabels":{"app":"a"}}`
)

func builtinCases() []builtinCase {
	return []builtinCase{
		{kind: "StatefulSet", gv: "apps/v1", resource: "statefulsets",
			obj: `{"metadata":{"name":"x"},"spec":{"serviceName":"db","selector":` + testSelector + `,"template":` + testTemplate +
				`,"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`,
			want: map[string]string{"metadata.generation": "1", "spec.replicas": "1", "spec.podManagementPolicy": `"OrderedReady"`,
				"spec.updateStrategy.type": `"RollingUpdate"`, "spec.updateStrategy.rollingUpdate.partition": "0",
				"spec.updateStrategy.rollingUpdate.maxUnavailable": "1", "spec.revisionHistoryLimit": "10",
				"spec.persistentVolumeClaimRetentionPolicy.whenDeleted": `"Retain"`, "spec.volumeClaimTemplates.0.kind": `"PersistentVolumeClaim"`,
				"spec.volumeClaimTemplates.0.status.phase": `"Pending"`, "spec.volumeClaimTemplates.0.spec.volumeMode": `"Filesystem"`,
				"spec.template.spec.containers.0.imagePullPolicy": `"IfNotPresent"`, "status": `{"availableReplicas":0,"replicas":0}`},
			status: `{"replicas":2,"readyReplicas":1}`, wantStatus: map[string]string{"status.readyReplicas": "1", "metadata.generation": "1"},
			update: `{"spec":{"replicas":3}}`, generation: 2,
			immutable:  `{"spec":{"serviceName":"other"}}`,
			invalid:    `{"metadata":{"name":"y"},"spec":{"selector":{"matchLabels":{"app":"b"}},"template":` + testTemplate + `}}`,
			causes:     []string{"spec.serviceName: FieldValueInvalid", "spec.template.metadata.labels: FieldValueInvalid"},
			shortNames: []string{"sts"}, categories: []string{"all"}, subresources: []string{"status", "scale"}},
		{kind: "DaemonSet", gv: "apps/v1", resource: "daemonsets",
			obj: `{"metadata":{"name":"x"},"spec":{"selector":` + testSelector + `,"template":` + testTemplate + `}}`,
			want: map[string]string{"metadata.annotations.deprecated\\.daemonset\\.template\\.generation": `"1"`,
				"spec.updateStrategy.rollingUpdate.maxUnavailable": "1", "spec.updateStrategy.rollingUpdate.maxSurge": "0", "spec.revisionHistoryLimit": "10"},
			status: `{"numberReady":1,"desiredNumberScheduled":1,"currentNumberScheduled":1,"numberMisscheduled":0}`,
			update: `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}}}}`, generation: 2,
			immutable:  `{"spec":{"selector":{"matchLabels":{"app":"a","x":"y"}},"template":{"metadata":{"labels":{"x":"y"}}}}}`,
			invalid:    `{"metadata":{"name":"y"},"spec":{"selector":{},"template":` + testTemplate + `}}`,
			causes:     []string{"spec.selector: FieldValueInvalid", "spec.selector: FieldValueInvalid"},
			shortNames: []string{"ds"}, categories: []string{"all"}, subresources: []string{"status"}},
		{kind: "ControllerRevision", gv: "apps/v1", resource: "controllerrevisions",
			obj: `{"metadata":{"name":"x"},"data":{"a":1},"revision":1}`, want: map[string]string{"metadata.generation": ""},
			update: `{"metadata":{"labels":{"l":"v"}}}`, immutable: `{"data":{"a":2}}`, invalid: `{"metadata":{"name":"y"},"revision":1}`,
			causes: []string{"data: FieldValueInvalid", "data: FieldValueRequired"}},
		{kind: "Job", gv: "batch/v1", resource: "jobs",
			obj: `{"metadata":{"name":"x"},"spec":{"template":` + testJobTemplate + `}}`,
			want: map[string]string{"spec.parallelism": "1", "spec.completions": "1", "spec.backoffLimit": "6", "spec.manualSelector": "false",
				"spec.suspend": "false", "spec.completionMode": `"NonIndexed"`, "spec.podReplacementPolicy": `"TerminatingOrFailed"`,
				"spec.template.metadata.labels.job-name": `"x"`, "spec.template.metadata.labels.batch\\.kubernetes\\.io/job-name": `"x"`,
				"metadata.labels.job-name": `"x"`, "metadata.generation": "1"},
			status: `{"active":1}`, wantStatus: map[string]string{"status.active": "1"},
			update: `{"spec":{"suspend":true}}`, generation: 2,
			immutable:  `{"spec":{"completions":2}}`,
			invalid:    `{"metadata":{"name":"y"},"spec":{"template":` + testTemplate + `}}`,
			causes:     []string{"spec.completions: FieldValueInvalid", "spec.template.spec.restartPolicy: FieldValueRequired"},
			categories: []string{"all"}, subresources: []string{"status"}},
		{kind: "CronJob", gv: "batch/v1", resource: "cronjobs",
			obj:    `{"metadata":{"name":"x"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":` + testJobTemplate + `}}}}`,
			want:   map[string]string{"spec.concurrencyPolicy": `"Allow"`, "spec.suspend": "false", "spec.successfulJobsHistoryLimit": "3", "spec.failedJobsHistoryLimit": "1", "spec.jobTemplate.spec.backoffLimit": ""},
			status: `{"lastScheduleTime":"2026-01-01T00:00:00Z"}`, update: `{"spec":{"schedule":"@hourly"}}`, generation: 2,
			invalid:    `{"metadata":{"name":"y"},"spec":{"schedule":"61 * * * *","jobTemplate":{"spec":{"template":` + testJobTemplate + `}}}}`,
			causes:     []string{"spec.schedule: FieldValueInvalid"},
			shortNames: []string{"cj"}, categories: []string{"all"}, subresources: []string{"status"}},
		{kind: "PersistentVolumeClaim", gv: "v1", resource: "persistentvolumeclaims",
			obj:    `{"metadata":{"name":"x"},"spec":{"storageClassName":"a","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"0.0001"}}}}`,
			want:   map[string]string{"status.phase": `"Pending"`, "spec.volumeMode": `"Filesystem"`, "spec.resources.requests.storage": `"1m"`, "metadata.generation": ""},
			status: `{"phase":"Bound","capacity":{"storage":"1Gi"}}`, wantStatus: map[string]string{"status.phase": `"Bound"`},
			immutable: `{"spec":{"storageClassName":"b"}}`, invalid: `{"metadata":{"name":"y"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`,
			causes:     []string{"spec: FieldValueForbidden", "spec.accessModes: FieldValueRequired"},
			shortNames: []string{"pvc"}, subresources: []string{"status"}},
		{kind: "PersistentVolume", gv: "v1", resource: "persistentvolumes", cluster: true,
			obj: `{"metadata":{"name":"x"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/d"}}}`,
			want: map[string]string{"status.phase": `"Pending"`, "spec.persistentVolumeReclaimPolicy": `"Retain"`, "spec.hostPath.type": `""`,
				"status.lastPhaseTransitionTime": `"2026-01-01T00:00:00Z"`},
			status: `{"phase":"Available"}`, wantStatus: map[string]string{"status.phase": `"Available"`, "status.lastPhaseTransitionTime": `"2026-01-01T00:00:00Z"`},
			immutable: `{"spec":{"hostPath":{"path":"/e"}}}`, invalid: `{"metadata":{"name":"y"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"]}}`,
			causes:     []string{"spec.persistentvolumesource: FieldValueForbidden", "spec: FieldValueRequired"},
			shortNames: []string{"pv"}, subresources: []string{"status"}},
		{kind: "Endpoints", gv: "v1", resource: "endpoints",
			obj:        `{"metadata":{"name":"x"},"subsets":[{"addresses":[{"ip":"10.0.0.1"}],"ports":[{"port":80}]}]}`,
			want:       map[string]string{"subsets.0.ports.0.protocol": `"TCP"`},
			shortNames: []string{"ep"}},
		{kind: "Node", gv: "v1", resource: "nodes", cluster: true,
			obj:    `{"metadata":{"name":"x"},"spec":{"podCIDR":"10.2.0.0/24"},"status":{"capacity":{"cpu":"4"}}}`,
			want:   map[string]string{"spec.podCIDRs.0": `"10.2.0.0/24"`, "status.allocatable.cpu": `"4"`},
			status: `{"capacity":{"cpu":"8"}}`, wantStatus: map[string]string{"status.allocatable.cpu": `"8"`},
			shortNames: []string{"no"}, subresources: []string{"status"}},
		{kind: "ReplicationController", gv: "v1", resource: "replicationcontrollers",
			obj:    `{"metadata":{"name":"x"},"spec":{"template":` + testTemplate + `}}`,
			want:   map[string]string{"spec.selector.app": `"a"`, "metadata.labels.app": `"a"`, "spec.replicas": "1", "metadata.generation": "1"},
			status: `{"replicas":1}`, update: `{"spec":{"replicas":2}}`, generation: 2,
			invalid: `{"metadata":{"name":"y"},"spec":{"selector":{"app":"a"}}}`, causes: []string{"spec.template: FieldValueRequired"},
			shortNames: []string{"rc"}, categories: []string{"all"}, subresources: []string{"status", "scale"}},
		{kind: "HorizontalPodAutoscaler", gv: "autoscaling/v2", resource: "horizontalpodautoscalers",
			obj: `{"metadata":{"name":"x"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"},"maxReplicas":3}}`,
			want: map[string]string{"spec.minReplicas": "1", "spec.metrics.0.resource.name": `"cpu"`,
				"spec.metrics.0.resource.target.averageUtilization": "80", "metadata.generation": "1"},
			status: `{"currentReplicas":1,"desiredReplicas":1}`, update: `{"spec":{"maxReplicas":4}}`, generation: 2,
			invalid:    `{"metadata":{"name":"y"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"},"minReplicas":3,"maxReplicas":2}}`,
			causes:     []string{"spec.maxReplicas: FieldValueInvalid"},
			shortNames: []string{"hpa"}, categories: []string{"all"}, subresources: []string{"status"}},
		{kind: "Ingress", gv: "networking.k8s.io/v1", resource: "ingresses",
			obj:    `{"metadata":{"name":"x"},"spec":{"defaultBackend":{"service":{"name":"s","port":{"number":80}}}}}`,
			want:   map[string]string{"metadata.generation": "1"},
			status: `{"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}}`, update: `{"spec":{"ingressClassName":"nginx"}}`, generation: 2,
			invalid: `{"metadata":{"name":"y"},"spec":{}}`, causes: []string{"spec: FieldValueInvalid"},
			shortNames: []string{"ing"}, subresources: []string{"status"}},
		{kind: "IngressClass", gv: "networking.k8s.io/v1", resource: "ingressclasses", cluster: true,
			obj:       `{"metadata":{"name":"x"},"spec":{"controller":"example.com/a","parameters":{"kind":"P","name":"p"}}}`,
			want:      map[string]string{"spec.parameters.scope": `"Cluster"`, "metadata.generation": "1"},
			immutable: `{"spec":{"controller":"example.com/b"}}`, causes: []string{"spec.controller: FieldValueInvalid"}},
		{kind: "NetworkPolicy", gv: "networking.k8s.io/v1", resource: "networkpolicies",
			obj:    `{"metadata":{"name":"x"},"spec":{"podSelector":{},"egress":[{"ports":[{"port":53}]}]}}`,
			want:   map[string]string{"spec.policyTypes": `["Ingress","Egress"]`, "spec.egress.0.ports.0.protocol": `"TCP"`, "metadata.generation": "1"},
			update: `{"spec":{"podSelector":{"matchLabels":{"a":"b"}}}}`, generation: 2,
			shortNames: []string{"netpol"}},
		{kind: "Role", gv: "rbac.authorization.k8s.io/v1", resource: "roles",
			obj:     `{"metadata":{"name":"system:x"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`,
			want:    map[string]string{"metadata.name": `"system:x"`},
			invalid: `{"metadata":{"name":"y"},"rules":[{"apiGroups":[""],"resources":["pods"]}]}`, causes: []string{"rules[0].verbs: FieldValueRequired"}},
		{kind: "ClusterRole", gv: "rbac.authorization.k8s.io/v1", resource: "clusterroles", cluster: true,
			obj: `{"metadata":{"name":"x:y"},"rules":[{"nonResourceURLs":["/healthz"],"verbs":["get"]}]}`},
		{kind: "RoleBinding", gv: "rbac.authorization.k8s.io/v1", resource: "rolebindings",
			obj:       `{"metadata":{"name":"x"},"roleRef":{"kind":"Role","name":"r"},"subjects":[{"kind":"User","name":"u"}]}`,
			want:      map[string]string{"roleRef.apiGroup": `"rbac.authorization.k8s.io"`, "subjects.0.apiGroup": `"rbac.authorization.k8s.io"`},
			immutable: `{"roleRef":{"name":"other"}}`, causes: []string{"roleRef: FieldValueInvalid"}},
		{kind: "ClusterRoleBinding", gv: "rbac.authorization.k8s.io/v1", resource: "clusterrolebindings", cluster: true,
			obj:     `{"metadata":{"name":"x"},"roleRef":{"kind":"ClusterRole","name":"r"},"subjects":[{"kind":"Group","name":"g"}]}`,
			want:    map[string]string{"roleRef.apiGroup": `"rbac.authorization.k8s.io"`},
			invalid: `{"metadata":{"name":"y"},"roleRef":{"kind":"Role","name":"r"}}`, causes: []string{"roleRef.kind: FieldValueNotSupported"}},
		{kind: "EndpointSlice", gv: "discovery.k8s.io/v1", resource: "endpointslices",
			obj:    `{"metadata":{"name":"x"},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}],"ports":[{"port":80}]}`,
			want:   map[string]string{"ports.0.protocol": `"TCP"`, "ports.0.name": `""`, "metadata.generation": "1"},
			update: `{"metadata":{"labels":{"a":"b"}}}`, generation: 2,
			immutable: `{"addressType":"FQDN"}`, causes: []string{"addressType: FieldValueInvalid"}},
		{kind: "Service", gv: "v1", resource: "services",
			obj:    `{"metadata":{"name":"x"},"spec":{"type":"LoadBalancer","ports":[{"port":80}]}}`,
			want:   map[string]string{"spec.allocateLoadBalancerNodePorts": "true", "spec.ports.0.targetPort": "80", "metadata.generation": ""},
			status: `{"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}}`, wantStatus: map[string]string{"status.loadBalancer.ingress.0.ipMode": `"VIP"`},
			invalid: `{"metadata":{"name":"y"},"spec":{"ports":[{"port":80},{"port":81}]}}`, causes: []string{"spec.ports[0].name: FieldValueRequired", "spec.ports[1].name: FieldValueRequired"},
			shortNames: []string{"svc"}, categories: []string{"all"}, subresources: []string{"status"}},
		{kind: "ConfigMap", gv: "v1", resource: "configmaps",
			obj: `{"metadata":{"name":"x"},"immutable":true,"data":{"a":"1"}}`, immutable: `{"data":{"a":"2"}}`,
			invalid: `{"metadata":{"name":"y"},"data":{"a/b":"1"}}`, causes: []string{"data: FieldValueForbidden", "data[a/b]: FieldValueInvalid"},
			shortNames: []string{"cm"}},
		{kind: "Secret", gv: "v1", resource: "secrets",
			obj:  `{"metadata":{"name":"x"},"stringData":{"k":"v"}}`,
			want: map[string]string{"type": `"Opaque"`, "data.k": `"dg=="`, "stringData": ""}, immutable: `{"type":"kubernetes.io/tls"}`,
			invalid: `{"metadata":{"name":"y"},"type":"kubernetes.io/tls","data":{"tls.crt":"Yw=="}}`,
			causes:  []string{"data[tls.crt]: FieldValueRequired", "data[tls.key]: FieldValueRequired", "type: FieldValueInvalid", "data[tls.key]: FieldValueRequired"}},
		{kind: "Pod", gv: "v1", resource: "pods",
			obj: `{"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"1","memory":"1Gi"}}}]}}`,
			want: map[string]string{"status.qosClass": `"Guaranteed"`, "spec.containers.0.resources.requests.cpu": `"1"`, "spec.priority": "0",
				"spec.preemptionPolicy": `"PreemptLowerPriority"`, "spec.tolerations.1.key": `"node.kubernetes.io/unreachable"`,
				"spec.containers.0.imagePullPolicy": `"Always"`, "spec.enableServiceLinks": "true"},
			status: `{"phase":"Running","podIP":"10.0.0.5"}`, wantStatus: map[string]string{"status.podIPs.0.ip": `"10.0.0.5"`, "status.qosClass": `"Guaranteed"`},
			shortNames: []string{"po"}, categories: []string{"all"}, subresources: []string{"status", "eviction"}},
	}
}

// TestBuiltinKinds runs every builtinCase on a cluster of AddBuiltinKinds.
func TestBuiltinKinds(t *testing.T) {
	c, _ := newTestCluster(t)
	AddBuiltinKinds(c)
	rc := newRESTClient(t, c)
	for _, bc := range builtinCases() {
		t.Run(bc.kind, func(t *testing.T) {
			base := "/apis/" + bc.gv
			if bc.gv == "v1" {
				base = "/api/v1"
			}
			coll := base + "/namespaces/ns/" + bc.resource
			if bc.cluster {
				coll = base + "/" + bc.resource
			}
			resp, body := rc.do(req{method: "POST", path: coll, body: bc.obj})
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create: %s", body)
			}
			created := jsonObject(t, body)
			checkPaths(t, "created", created, bc.want)
			gen := created["metadata"].(map[string]any)["generation"]

			if bc.status != "" {
				var st any
				if err := json.Unmarshal([]byte(bc.status), &st); err != nil {
					t.Fatal(err)
				}
				obj := jsonObject(t, body)
				obj["status"] = st
				if spec, ok := obj["spec"].(map[string]any); ok {
					spec["ignoredByStatus"] = true // not a field: dropped anyway
				}
				obj["metadata"].(map[string]any)["labels"] = map[string]any{"written": "status"}
				resp, body := rc.do(req{method: "PUT", path: coll + "/" + name(created) + "/status", body: mustJSON(t, obj)})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status write: %s", body)
				}
				after := jsonObject(t, body)
				checkPaths(t, "after the status write", after, bc.wantStatus)
				checkPaths(t, "after the status write", after, map[string]string{"metadata.labels.written": `"status"`})
				if !apiequality.Semantic.DeepEqual(after["spec"], created["spec"]) {
					t.Errorf("a status write changed the spec: %v, was %v", after["spec"], created["spec"])
				}
				if g := after["metadata"].(map[string]any)["generation"]; g != gen {
					t.Errorf("a status write changed the generation from %v to %v", gen, g)
				}
			}
			if bc.update != "" {
				resp, body := rc.do(req{method: "PATCH", path: coll + "/" + name(created), contentType: "application/merge-patch+json", body: bc.update})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("update: %s", body)
				}
				want := gen
				if bc.generation != 0 {
					want = float64(bc.generation)
				}
				if g := jsonObject(t, body)["metadata"].(map[string]any)["generation"]; g != want {
					t.Errorf("generation after the update %v, want %v", g, want)
				}
			}
			var causes []string
			if bc.immutable != "" {
				resp, body := rc.do(req{method: "PATCH", path: coll + "/" + name(created), contentType: "application/merge-patch+json", body: bc.immutable})
				causes = append(causes, refusal(t, resp, body)...)
			}
			if bc.invalid != "" {
				resp, body := rc.do(req{method: "POST", path: coll, body: bc.invalid})
				causes = append(causes, refusal(t, resp, body)...)
			}
			if !slices.Equal(causes, bc.causes) {
				t.Errorf("refusals %q, want %q", causes, bc.causes)
			}
			checkDiscovery(t, rc, bc)
			checkProtobuf(t, c, rc, coll+"/"+name(created))
		})
	}
}

func name(obj map[string]any) string { return obj["metadata"].(map[string]any)["name"].(string) }

func jsonObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkPaths checks the JSON value at each dotted path ("\." for a dot in
// a key, numbers index lists); "" wants the path absent.
func checkPaths(t *testing.T, what string, obj map[string]any, want map[string]string) {
	t.Helper()
	for path, w := range want {
		var cur any = obj
		found := true
		for _, part := range splitEscapedPath(path) {
			switch v := cur.(type) {
			case map[string]any:
				cur, found = v[part]
			case []any:
				i, err := strconv.Atoi(part)
				found = err == nil && i < len(v)
				if found {
					cur = v[i]
				}
			default:
				found = false
			}
			if !found {
				break
			}
		}
		got := ""
		if found {
			b, _ := json.Marshal(cur)
			got = string(b)
		}
		if got != w {
			t.Errorf("%s: %s = %s, want %s", what, path, orAbsent(got), orAbsent(w))
		}
	}
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

func splitEscapedPath(p string) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i++
			cur.WriteByte(p[i])
		case p[i] == '.':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(p[i])
		}
	}
	return append(parts, cur.String())
}

// refusal returns the causes of a 422 answer as "<field>: <type>".
func refusal(t *testing.T, resp *http.Response, body []byte) []string {
	t.Helper()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("got %d, want 422 Invalid: %s", resp.StatusCode, body)
		return nil
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range st.Details.Causes {
		out = append(out, fmt.Sprintf("%s: %s", c.Field, c.Type))
	}
	slices.Sort(out)
	return out
}

func checkDiscovery(t *testing.T, rc restClient, bc builtinCase) {
	t.Helper()
	path := "/apis/" + bc.gv
	if bc.gv == "v1" {
		path = "/api/v1"
	}
	resp, body := rc.do(req{method: "GET", path: path})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("discovery: %s", body)
	}
	var l metav1.APIResourceList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	var subs []string
	found := false
	for _, r := range l.APIResources {
		switch {
		case r.Name == bc.resource:
			found = true
			want := metav1.APIResource{Name: bc.resource, SingularName: strings.ToLower(bc.kind), Namespaced: !bc.cluster, Kind: bc.kind,
				Verbs: resourceVerbs(), ShortNames: bc.shortNames, Categories: bc.categories}
			if !apiequality.Semantic.DeepEqual(r, want) {
				t.Errorf("discovery entry %+v, want %+v", r, want)
			}
		case strings.HasPrefix(r.Name, bc.resource+"/"):
			subs = append(subs, strings.TrimPrefix(r.Name, bc.resource+"/"))
		}
	}
	if !found {
		t.Errorf("discovery of %s has no %s", bc.gv, bc.resource)
	}
	if !slices.Equal(subs, bc.subresources) {
		t.Errorf("subresources %q, want %q", subs, bc.subresources)
	}
}

// checkProtobuf gets the object as protobuf and as JSON, decodes both into
// the Go type, and compares.
func checkProtobuf(t *testing.T, c *Cluster, rc restClient, path string) {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, autoscalingv2.AddToScheme,
		networkingv1.AddToScheme, rbacv1.AddToScheme, discoveryv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	codecs := serializer.NewCodecFactory(s)
	resp, pb := rc.do(req{method: "GET", path: path, accept: runtime.ContentTypeProtobuf})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != runtime.ContentTypeProtobuf {
		t.Fatalf("protobuf get: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	_, js := rc.do(req{method: "GET", path: path})
	fromPB, _, err := codecs.UniversalDeserializer().Decode(pb, nil, nil)
	if err != nil {
		t.Fatalf("decoding protobuf: %v", err)
	}
	fromJSON, _, err := codecs.UniversalDeserializer().Decode(js, nil, nil)
	if err != nil {
		t.Fatalf("decoding JSON: %v", err)
	}
	fromPB.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	fromJSON.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	// Embedded objects' kinds exist in JSON only (a StatefulSet's claim
	// templates), as from kube-apiserver.
	if ss, ok := fromJSON.(*appsv1.StatefulSet); ok {
		for i := range ss.Spec.VolumeClaimTemplates {
			ss.Spec.VolumeClaimTemplates[i].TypeMeta = metav1.TypeMeta{}
		}
	}
	if !apiequality.Semantic.DeepEqual(fromPB, fromJSON) {
		t.Errorf("protobuf and JSON differ:\n%+v\n%+v", fromPB, fromJSON)
	}
}

// TestUnserved: a request for a resource the cluster does not serve is
// kube-apiserver's 404, whose message names it and says how to add it.
func TestUnserved(t *testing.T) {
	c, _ := newTestCluster(t)
	rc := newRESTClient(t, c)
	for _, tt := range []struct {
		path, want string
	}{
		{"/apis/apps/v1/namespaces/ns/statefulsets", `resource "statefulsets" in apps/v1: add the built-in kinds with memcluster.AddBuiltinKinds`},
		{"/apis/apps/v1/namespaces/ns/statefulsets/web/scale", `resource "statefulsets" in apps/v1: add the built-in kinds`},
		{"/api/v1/namespaces/ns/configmaps/x", `resource "configmaps" in v1: add the built-in kinds`},
		{"/api/v1/nodes", `resource "nodes" in v1: add the built-in kinds`},
		{"/apis/batch/v1", `API group version batch/v1: add the built-in kinds`},
		{"/apis/example.com/v1/namespaces/ns/widgets", `resource "widgets" in example.com/v1: add its Go type with memcluster.NewResource(c, kind) and memcluster.KindFor (in the test bench: Options.Types or Options.Kinds), or install its CustomResourceDefinition`},
		{"/apis/example.com/v1", `API group version example.com/v1: add its Go type`},
	} {
		resp, body := rc.do(req{method: "GET", path: tt.path})
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusNotFound || st.Reason != metav1.StatusReasonNotFound || st.Kind != "Status" ||
			!strings.HasPrefix(st.Message, "the server could not find the requested resource: memcluster does not serve "+tt.want) {
			t.Errorf("GET %s: %d %s %q\nwant 404 NotFound, message naming %s", tt.path, resp.StatusCode, st.Reason, st.Message, tt.want)
		}
	}
	AddBuiltinKinds(c)
	resp, body := rc.do(req{method: "GET", path: "/apis/autoscaling/v1/namespaces/ns/horizontalpodautoscalers"})
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "it is served in autoscaling v2 only") {
		t.Errorf("autoscaling/v1 HPAs: %d %s; want 404 saying v2 only", resp.StatusCode, body)
	}
	if resp, _ := rc.do(req{method: "GET", path: "/apis/apps/v1/namespaces/ns/statefulsets"}); resp.StatusCode != http.StatusOK {
		t.Errorf("statefulsets after AddBuiltinKinds: %d, want 200", resp.StatusCode)
	}
}

// TestAddBuiltinKindsKeepsKinds: AddBuiltinKinds may follow addCoreKinds,
// run twice, and keeps a kind the cluster has already.
func TestAddBuiltinKindsKeepsKinds(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	own := NewResource(c, Kind[*appsv1.StatefulSet]{GVK: appsv1.SchemeGroupVersion.WithKind("StatefulSet"), Resource: "statefulsets",
		New: func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} }})
	AddBuiltinKinds(c)
	AddBuiltinKinds(c)
	addCoreKinds(c)
	ss := must(own.Namespace("ns").Create(ctxT(t), &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}))(t)
	if ss.Spec.Replicas != nil {
		t.Errorf("the user's StatefulSet kind was replaced: replicas defaulted to %d", *ss.Spec.Replicas)
	}
	// The table's kinds and policy/v1 PodDisruptionBudget (see pdb_test.go).
	if n := len(c.order); n != len(builtins)+1 {
		t.Errorf("%d kinds, want %d", n, len(builtins)+1)
	}
}

// TestStatefulSetAndReplicationControllerScale: the scale subresource of
// the kinds that have one besides Deployments and ReplicaSets.
func TestStatefulSetAndReplicationControllerScale(t *testing.T) {
	c, _ := newTestCluster(t)
	AddBuiltinKinds(c)
	rc := newRESTClient(t, c)
	for _, tt := range []struct{ coll, obj, selector string }{
		{"/apis/apps/v1/namespaces/ns/statefulsets", `{"metadata":{"name":"x"},"spec":{"selector":` + testSelector + `,"template":` + testTemplate + `}}`, "app=a"},
		{"/api/v1/namespaces/ns/replicationcontrollers", `{"metadata":{"name":"x"},"spec":{"template":` + testTemplate + `}}`, "app=a"},
	} {
		if resp, body := rc.do(req{method: "POST", path: tt.coll, body: tt.obj}); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %s", body)
		}
		resp, body := rc.do(req{method: "PATCH", path: tt.coll + "/x/scale", contentType: "application/merge-patch+json", body: `{"spec":{"replicas":4}}`})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scale: %s", body)
		}
		sc := jsonObject(t, body)
		checkPaths(t, tt.coll+" scale", sc, map[string]string{"kind": `"Scale"`, "spec.replicas": "4", "status.selector": `"` + tt.selector + `"`})
		_, body = rc.do(req{method: "GET", path: tt.coll + "/x"})
		checkPaths(t, tt.coll, jsonObject(t, body), map[string]string{"spec.replicas": "4", "metadata.generation": "2"})
	}
}

// TestDaemonSetTemplateGeneration: the template generation annotation
// starts at 1 and counts template changes only, whatever a client sends.
func TestDaemonSetTemplateGeneration(t *testing.T) {
	c, _ := newTestCluster(t)
	AddBuiltinKinds(c)
	rc := newRESTClient(t, c)
	const coll = "/apis/apps/v1/namespaces/ns/daemonsets"
	rc.do(req{method: "POST", path: coll, body: `{"metadata":{"name":"x"},"spec":{"selector":` + testSelector + `,"template":` + testTemplate + `}}`})
	for _, step := range []struct{ patch, want string }{
		{`{"spec":{"minReadySeconds":3}}`, "1"},
		{`{"metadata":{"annotations":{"deprecated.daemonset.template.generation":"9"}}}`, "1"},
		{`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}`, "2"},
		{`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2","imagePullPolicy":"IfNotPresent"}]}}}}`, "2"}, // the default
	} {
		resp, body := rc.do(req{method: "PATCH", path: coll + "/x", contentType: "application/merge-patch+json", body: step.patch})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", step.patch, body)
		}
		checkPaths(t, step.patch, jsonObject(t, body), map[string]string{"metadata.annotations.deprecated\\.daemonset\\.template\\.generation": `"` + step.want + `"`})
	}
}

// TestJobSelectorGeneration: a Job without a manual selector selects its
// pods by its uid, and labels its template (and itself) with it.
func TestJobSelectorGeneration(t *testing.T) {
	c, _ := newTestCluster(t)
	AddBuiltinKinds(c)
	rc := newRESTClient(t, c)
	_, body := rc.do(req{method: "POST", path: "/apis/batch/v1/namespaces/ns/jobs", body: `{"metadata":{"name":"j"},"spec":{"template":` +
		`{"metadata":{"labels":{"app":"a"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`})
	j := jsonObject(t, body)
	uid := `"` + j["metadata"].(map[string]any)["uid"].(string) + `"`
	labels := map[string]string{"app": `"a"`, "controller-uid": uid, "job-name": `"j"`,
		"batch\\.kubernetes\\.io/controller-uid": uid, "batch\\.kubernetes\\.io/job-name": `"j"`}
	want := map[string]string{"spec.selector": `{"matchLabels":{"batch.kubernetes.io/controller-uid":` + uid + `}}`}
	for k, v := range labels {
		want["spec.template.metadata.labels."+k] = v
		want["metadata.labels."+k] = v // copied from the template: the Job had none
	}
	checkPaths(t, "job", j, want)
}

// TestPersistentVolumePhaseTransitionTime: a new volume is Pending since
// its creation; a status write that changes the phase without a time gets
// the current one; one that keeps the phase keeps the time.
func TestPersistentVolumePhaseTransitionTime(t *testing.T) {
	c, fc := newTestCluster(t)
	AddBuiltinKinds(c)
	rc := newRESTClient(t, c)
	const path = "/api/v1/persistentvolumes/pv"
	rc.do(req{method: "POST", path: "/api/v1/persistentvolumes", body: `{"metadata":{"name":"pv"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/d"}}}`})
	at := func(d time.Duration) string { return `"` + t0.Add(d).UTC().Format(time.RFC3339) + `"` }
	for _, step := range []struct {
		advance time.Duration
		status  string
		want    string
	}{
		{time.Minute, `{"phase":"Pending"}`, at(0)},
		{time.Minute, `{"phase":"Available"}`, at(2 * time.Minute)},
		{time.Minute, `{"phase":"Bound","lastPhaseTransitionTime":"2020-01-01T00:00:00Z"}`, `"2020-01-01T00:00:00Z"`},
	} {
		fc.Step(step.advance)
		_, body := rc.do(req{method: "GET", path: path})
		obj := jsonObject(t, body)
		var st map[string]any
		_ = json.Unmarshal([]byte(step.status), &st)
		obj["status"] = st
		resp, body := rc.do(req{method: "PUT", path: path + "/status", body: mustJSON(t, obj)})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", step.status, body)
		}
		checkPaths(t, step.status, jsonObject(t, body), map[string]string{"status.lastPhaseTransitionTime": step.want})
	}
}

func TestCronSchedule(t *testing.T) {
	for _, tt := range []struct{ schedule, err string }{
		{"* * * * *", ""}, {"*/5 0-6 1,15 JAN-mar mon-FRI", ""}, {"0 0 ? * 6", ""}, {"5/15 * * * *", ""}, {"@hourly", ""}, {"@every 1h30m", ""},
		{"TZ=Etc/UTC 0 0 * * *", ""},
		{"", "empty spec string"},
		{"* * *", "expected exactly 5 fields, found 3: [* * *]"},
		{"61 * * * *", "end of range (61) above maximum (59): 61"},
		{"* * 0 * *", "beginning of range (0) below minimum (1): 0"},
		{"5-2 * * * *", "beginning of range (5) beyond end of range (2): 5-2"},
		{"*/0 * * * *", "step of range should be a positive number: */0"},
		{"1-2-3 * * * *", "too many hyphens: 1-2-3"},
		{"x * * * *", `failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax`},
		{"@weekdays", "unrecognized descriptor: @weekdays"},
		{"* * * * 7", "end of range (7) above maximum (6): 7"},
	} {
		err := cronSchedule(tt.schedule)
		if got := fmt.Sprint(err); (err == nil) != (tt.err == "") || err != nil && got != tt.err {
			t.Errorf("cronSchedule(%q) = %v, want %q", tt.schedule, err, tt.err)
		}
	}
}
