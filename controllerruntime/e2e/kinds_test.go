//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// TestKindsSideBySide creates a minimal and a richer object of every kind
// memcluster.AddBuiltinKinds serves on kube-apiserver v1.37.1 and on
// memcluster, writes their status and updates their spec, makes the
// updates and creates kube-apiserver refuses (immutable fields, missing
// required ones), and compares the answers: the stored objects after
// normalising only what must differ (uid, resourceVersion, timestamps,
// allocated IPs and ports; managedFields are compared but for their
// times), and the errors' status, reason and causes.
// It also compares each kind's discovery entry. It logs the match table.
func TestKindsSideBySide(t *testing.T) {
	ns := sideNamespace(t)
	results := map[string][2]string{} // case → the two sides' normalised answers
	var order []string
	var discoveryDocs [2]map[string]metav1.APIResource
	for i, s := range sides(t) {
		dyn, err := dynamic.NewForConfig(s.cfg)
		if err != nil {
			t.Fatal(err)
		}
		k := &kindsRun{t: t, ctx: t.Context(), dyn: dyn, ns: ns, uids: map[string]bool{}}
		k.create(gvr("", "v1", "namespaces"), true, fmt.Sprintf(`{"metadata":{"name":%q}}`, ns))
		for _, c := range kindCases(ns) {
			for _, step := range k.run(c) {
				if i == 0 {
					order = append(order, step.name)
				}
				r := results[step.name]
				r[i] = step.answer
				results[step.name] = r
			}
		}
		for _, c := range kindErrorCases(ns) {
			name := "invalid: " + c.name
			if i == 0 {
				order = append(order, name)
			}
			r := results[name]
			r[i] = k.invalid(c)
			results[name] = r
		}
		disc, err := discovery.NewDiscoveryClientForConfig(s.cfg)
		if err != nil {
			t.Fatal(err)
		}
		discoveryDocs[i] = kindsDiscovery(t, disc)
	}

	var table strings.Builder
	fmt.Fprintf(&table, "\n| case | kube-apiserver v1.37.1 vs memcluster |\n|---|---|\n")
	same := 0
	for _, name := range order {
		r := results[name]
		verdict := "same"
		if diff := cmp.Diff(r[0], r[1]); diff != "" {
			verdict = "DIFFERENT"
			t.Errorf("%s: answers differ (-kube-apiserver +memcluster):\n%s", name, diff)
		} else {
			same++
		}
		fmt.Fprintf(&table, "| %s | %s |\n", name, verdict)
	}
	for _, res := range slices.Sorted(mapsKeys(discoveryDocs[1])) {
		verdict := "same"
		if diff := cmp.Diff(discoveryDocs[0][res], discoveryDocs[1][res]); diff != "" {
			verdict = "DIFFERENT"
			t.Errorf("discovery of %s differs (-kube-apiserver +memcluster):\n%s", res, diff)
		} else {
			same++
		}
		fmt.Fprintf(&table, "| discovery %s | %s |\n", res, verdict)
	}
	fmt.Fprintf(&table, "\n%d of %d answers the same", same, len(order)+len(discoveryDocs[1]))
	t.Log(table.String())
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// kindCase is an object of one kind, created, then (if set) given a new
// status and updated with a merge patch.
type kindCase struct {
	name    string
	gvr     schema.GroupVersionResource
	cluster bool   // cluster-scoped
	obj     string // JSON; metadata.namespace is filled in
	status  string // JSON of a status to write, with the label "written": "status"
	patch   string // JSON merge patch of an update
	put     string // JSON of an object to replace it with, unconditionally
}

// kindErrorCase is a request kube-apiserver refuses: the create of bad,
// or, with obj set, the create of obj then the merge patch bad.
type kindErrorCase struct {
	name    string
	gvr     schema.GroupVersionResource
	cluster bool
	obj     string
	bad     string
}

const (
	kindsTemplate     = `{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`
	kindsRichTemplate = `{"metadata":{"labels":{"app":"a","tier":"web"},"annotations":{"note":"x"}},"spec":{` +
		`"serviceAccountName":"builder","containers":[{"name":"c","image":"registry.example.com/team/app","ports":[{"containerPort":8080,"name":"http"}],` +
		`"env":[{"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}],` +
		`"resources":{"limits":{"cpu":"500m","memory":"256Mi"}},` +
		`"readinessProbe":{"httpGet":{"port":"http"}},"livenessProbe":{"tcpSocket":{"port":8080},"periodSeconds":5},` +
		`"volumeMounts":[{"name":"cfg","mountPath":"/cfg"},{"name":"tmp","mountPath":"/tmp"}]}],` +
		`"initContainers":[{"name":"init","image":"busybox:latest","command":["true"]}],` +
		`"volumes":[{"name":"cfg","configMap":{"name":"cfg"}},{"name":"tmp"},{"name":"tok","projected":{"sources":[{"serviceAccountToken":{"path":"t"}}]}}],` +
		`"tolerations":[{"key":"k","operator":"Exists"}]}}`
)

func kindCases(ns string) []kindCase {
	tmpl, rich := kindsTemplate, kindsRichTemplate
	sel := `{"matchLabels":{"app":"a"}}`
	jobTmpl := strings.Replace(tmpl, `"containers"`, `"restartPolicy":"Never","containers"`, 1)
	return []kindCase{
		{name: "Deployment minimal", gvr: gvr("apps", "v1", "deployments"),
			obj:    `{"metadata":{"name":"d1"},"spec":{"selector":` + sel + `,"template":` + tmpl + `}}`,
			status: `{"replicas":1,"observedGeneration":1}`, patch: `{"spec":{"replicas":3}}`},
		{name: "Deployment rich", gvr: gvr("apps", "v1", "deployments"),
			obj: `{"metadata":{"name":"d2"},"spec":{"replicas":2,"strategy":{"type":"Recreate"},"selector":` + sel + `,"template":` + rich + `}}`},
		{name: "ReplicaSet minimal", gvr: gvr("apps", "v1", "replicasets"),
			obj: `{"metadata":{"name":"rs1"},"spec":{"selector":` + sel + `,"template":` + tmpl + `}}`, status: `{"replicas":1}`},
		{name: "StatefulSet minimal", gvr: gvr("apps", "v1", "statefulsets"),
			obj:    `{"metadata":{"name":"sts1"},"spec":{"selector":` + sel + `,"template":` + tmpl + `}}`,
			status: `{"replicas":1,"readyReplicas":1,"currentRevision":"r1","observedGeneration":1,"availableReplicas":1}`,
			patch:  `{"spec":{"replicas":2}}`},
		{name: "StatefulSet rich", gvr: gvr("apps", "v1", "statefulsets"),
			obj: `{"metadata":{"name":"sts2","labels":{"own":"x"}},"spec":{"replicas":3,"serviceName":"db","podManagementPolicy":"Parallel",` +
				`"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}},"minReadySeconds":5,` +
				`"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Delete"},"ordinals":{"start":1},` +
				`"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}],` +
				`"selector":` + sel + `,"template":` + rich + `}}`,
			patch: `{"spec":{"template":{"metadata":{"annotations":{"note":"y"}}}}}`},
		{name: "StatefulSet OnDelete", gvr: gvr("apps", "v1", "statefulsets"),
			obj: `{"metadata":{"name":"sts3"},"spec":{"updateStrategy":{"type":"OnDelete"},"selector":` + sel + `,"template":` + tmpl + `}}`},
		{name: "DaemonSet minimal", gvr: gvr("apps", "v1", "daemonsets"),
			obj:    `{"metadata":{"name":"ds1"},"spec":{"selector":` + sel + `,"template":` + tmpl + `}}`,
			status: `{"currentNumberScheduled":1,"numberMisscheduled":0,"desiredNumberScheduled":1,"numberReady":1}`,
			patch:  `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}}}}`},
		{name: "DaemonSet rich", gvr: gvr("apps", "v1", "daemonsets"),
			obj: `{"metadata":{"name":"ds2"},"spec":{"updateStrategy":{"rollingUpdate":{"maxSurge":1,"maxUnavailable":0}},"minReadySeconds":3,` +
				`"revisionHistoryLimit":2,"selector":` + sel + `,"template":` + rich + `}}`,
			patch: `{"spec":{"minReadySeconds":4}}`},
		{name: "ControllerRevision", gvr: gvr("apps", "v1", "controllerrevisions"),
			obj: `{"metadata":{"name":"cr1"},"data":{"spec":{"template":{"a":1}}},"revision":2}`, patch: `{"metadata":{"labels":{"x":"y"}}}`},
		{name: "Job minimal", gvr: gvr("batch", "v1", "jobs"),
			obj:    `{"metadata":{"name":"job1"},"spec":{"template":` + jobTmpl + `}}`,
			status: `{"active":1,"ready":0,"terminating":0}`, patch: `{"spec":{"suspend":true}}`},
		{name: "Job without labels", gvr: gvr("batch", "v1", "jobs"),
			obj: `{"metadata":{"name":"job2"},"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "Job rich", gvr: gvr("batch", "v1", "jobs"),
			obj: `{"metadata":{"name":"job3","labels":{"own":"x"}},"spec":{"parallelism":2,"completions":4,"completionMode":"Indexed",` +
				`"backoffLimitPerIndex":1,"ttlSecondsAfterFinished":60,"podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},` +
				`"template":` + strings.Replace(rich, `"serviceAccountName"`, `"restartPolicy":"Never","serviceAccountName"`, 1) + `}}`},
		{name: "Job manual selector", gvr: gvr("batch", "v1", "jobs"),
			obj: `{"metadata":{"name":"job4"},"spec":{"manualSelector":true,"selector":` + sel + `,"template":` + jobTmpl + `}}`},
		{name: "CronJob minimal", gvr: gvr("batch", "v1", "cronjobs"),
			obj:    `{"metadata":{"name":"cj1"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":` + jobTmpl + `}}}}`,
			status: `{"lastScheduleTime":"2026-01-01T00:00:00Z"}`, patch: `{"spec":{"schedule":"@hourly"}}`},
		{name: "CronJob rich", gvr: gvr("batch", "v1", "cronjobs"),
			obj: `{"metadata":{"name":"cj2"},"spec":{"schedule":"0 3 * JAN-MAR mon-fri","timeZone":"Etc/UTC","concurrencyPolicy":"Forbid",` +
				`"startingDeadlineSeconds":30,"successfulJobsHistoryLimit":1,"jobTemplate":{"metadata":{"labels":{"j":"1"}},"spec":{"backoffLimit":2,"template":` + jobTmpl + `}}}}`},
		{name: "PersistentVolumeClaim minimal", gvr: gvr("", "v1", "persistentvolumeclaims"),
			obj:    `{"metadata":{"name":"pvc1"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
			status: `{"phase":"Bound","capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"]}`},
		{name: "PersistentVolumeClaim rich", gvr: gvr("", "v1", "persistentvolumeclaims"),
			obj: `{"metadata":{"name":"pvc2"},"spec":{"accessModes":["ReadWriteMany"],"storageClassName":"fast","volumeMode":"Block",` +
				`"selector":{"matchLabels":{"disk":"ssd"}},"resources":{"requests":{"storage":"0.5Gi"},"limits":{"storage":"2Gi"}}}}`},
		{name: "PersistentVolume minimal", gvr: gvr("", "v1", "persistentvolumes"), cluster: true,
			obj:    `{"metadata":{"name":"` + ns + `-pv1"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"}}}`,
			status: `{"phase":"Available"}`},
		{name: "PersistentVolume rich", gvr: gvr("", "v1", "persistentvolumes"), cluster: true,
			obj: `{"metadata":{"name":"` + ns + `-pv2"},"spec":{"capacity":{"storage":"10Gi"},"accessModes":["ReadWriteOnce","ReadOnlyMany"],` +
				`"persistentVolumeReclaimPolicy":"Delete","storageClassName":"fast","mountOptions":["ro"],` +
				`"claimRef":{"namespace":"` + ns + `","name":"pvc1"},"local":{"path":"/mnt/disk"},` +
				`"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n1"]}]}]}}}}`},
		{name: "Service minimal", gvr: gvr("", "v1", "services"),
			obj:    `{"metadata":{"name":"svc1"},"spec":{"selector":{"app":"a"},"ports":[{"port":80}]}}`,
			status: `{"conditions":[{"type":"Ready","status":"True","reason":"R","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
			patch:  `{"spec":{"ports":[{"port":81}]}}`},
		{name: "Service NodePort", gvr: gvr("", "v1", "services"),
			obj: `{"metadata":{"name":"svc2"},"spec":{"type":"NodePort","sessionAffinity":"ClientIP","selector":{"app":"a"},` +
				`"ports":[{"name":"http","port":80,"targetPort":"http"},{"name":"dns","port":53,"protocol":"UDP"}]}}`},
		{name: "Service LoadBalancer", gvr: gvr("", "v1", "services"),
			obj:    `{"metadata":{"name":"svc3"},"spec":{"type":"LoadBalancer","ports":[{"port":443}]}}`,
			status: `{"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}}`},
		{name: "Service headless", gvr: gvr("", "v1", "services"),
			obj: `{"metadata":{"name":"svc4"},"spec":{"clusterIP":"None","selector":{"app":"a"}}}`},
		{name: "Service ExternalName", gvr: gvr("", "v1", "services"),
			obj: `{"metadata":{"name":"svc5"},"spec":{"type":"ExternalName","externalName":"example.com"}}`},
		{name: "Endpoints", gvr: gvr("", "v1", "endpoints"),
			obj: `{"metadata":{"name":"svc1"},"subsets":[{"addresses":[{"ip":"10.1.0.1"}],"ports":[{"port":80,"name":"http"}]}]}`},
		{name: "ConfigMap minimal", gvr: gvr("", "v1", "configmaps"), obj: `{"metadata":{"name":"cm1"}}`},
		{name: "ConfigMap rich", gvr: gvr("", "v1", "configmaps"),
			obj: `{"metadata":{"name":"cm2"},"immutable":true,"data":{"a":"1","b.txt":"x"},"binaryData":{"c":"AAE="}}`},
		{name: "Secret minimal", gvr: gvr("", "v1", "secrets"),
			obj: `{"metadata":{"name":"s1"},"stringData":{"user":"u"},"data":{"user":"b2xk","pw":"cA=="}}`, patch: `{"stringData":{"pw":"new"}}`},
		{name: "Secret TLS", gvr: gvr("", "v1", "secrets"),
			obj: `{"metadata":{"name":"s2"},"type":"kubernetes.io/tls","data":{"tls.crt":"Yw==","tls.key":"aw=="}}`},
		{name: "ServiceAccount", gvr: gvr("", "v1", "serviceaccounts"),
			obj: `{"metadata":{"name":"builder"},"automountServiceAccountToken":false,"secrets":[{"name":"tok","namespace":"other","uid":"x"}]}`},
		{name: "Event", gvr: gvr("", "v1", "events"),
			obj: `{"metadata":{"name":"e1"},"involvedObject":{"kind":"Pod","name":"p","namespace":"` + ns + `"},"reason":"R","message":"m","type":"Normal","count":1}`},
		{name: "Pod minimal", gvr: gvr("", "v1", "pods"), obj: `{"metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			status: `{"phase":"Running","podIP":"10.1.0.5","conditions":[{"type":"Ready","status":"True"}]}`,
			put:    `{"metadata":{"name":"p1","labels":{"again":"as-sent"}},"spec":{"containers":[{"name":"c","image":"nginx:latest"}]}}`},
		{name: "Pod rich", gvr: gvr("", "v1", "pods"),
			obj: `{"metadata":{"name":"p2"},` + strings.TrimPrefix(strings.Replace(rich, `{"metadata":{"labels":{"app":"a","tier":"web"},"annotations":{"note":"x"}},`, "", 1), "{")},
		{name: "Node minimal", gvr: gvr("", "v1", "nodes"), cluster: true, obj: `{"metadata":{"name":"` + ns + `-n1"}}`,
			status: `{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True"}]}`},
		{name: "Node rich", gvr: gvr("", "v1", "nodes"), cluster: true,
			obj: `{"metadata":{"name":"` + ns + `-n2","labels":{"zone":"a"}},"spec":{"podCIDR":"10.2.0.0/24","unschedulable":true,` +
				`"taints":[{"key":"k","value":"v","effect":"NoSchedule"}]},"status":{"capacity":{"cpu":"2"}}}`},
		{name: "ReplicationController", gvr: gvr("", "v1", "replicationcontrollers"),
			obj: `{"metadata":{"name":"rc1"},"spec":{"template":` + tmpl + `}}`, status: `{"replicas":1}`, patch: `{"spec":{"replicas":2}}`},
		{name: "HorizontalPodAutoscaler minimal", gvr: gvr("autoscaling", "v2", "horizontalpodautoscalers"),
			obj:    `{"metadata":{"name":"hpa1"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d1"},"maxReplicas":5}}`,
			status: `{"currentReplicas":1,"desiredReplicas":2}`, patch: `{"spec":{"maxReplicas":6}}`},
		{name: "HorizontalPodAutoscaler rich", gvr: gvr("autoscaling", "v2", "horizontalpodautoscalers"),
			obj: `{"metadata":{"name":"hpa2"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"sts1"},"minReplicas":2,"maxReplicas":9,` +
				`"metrics":[{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"100Mi"}}}],` +
				`"behavior":{"scaleDown":{"stabilizationWindowSeconds":60},"scaleUp":{"selectPolicy":"Min"}}}}`},
		{name: "Ingress minimal", gvr: gvr("networking.k8s.io", "v1", "ingresses"),
			obj:    `{"metadata":{"name":"ing1"},"spec":{"defaultBackend":{"service":{"name":"svc1","port":{"number":80}}}}}`,
			status: `{"loadBalancer":{"ingress":[{"ip":"192.0.2.2"}]}}`, patch: `{"spec":{"ingressClassName":"nginx"}}`},
		{name: "Ingress rich", gvr: gvr("networking.k8s.io", "v1", "ingresses"),
			obj: `{"metadata":{"name":"ing2"},"spec":{"ingressClassName":"nginx","tls":[{"hosts":["a.example.com"],"secretName":"s2"}],` +
				`"rules":[{"host":"a.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"svc1","port":{"name":"http"}}}}]}}]}}`},
		{name: "IngressClass", gvr: gvr("networking.k8s.io", "v1", "ingressclasses"), cluster: true,
			obj:   `{"metadata":{"name":"` + ns + `-ic"},"spec":{"controller":"example.com/ingress","parameters":{"kind":"Params","name":"p","apiGroup":"example.com"}}}`,
			patch: `{"metadata":{"labels":{"x":"y"}}}`},
		{name: "NetworkPolicy minimal", gvr: gvr("networking.k8s.io", "v1", "networkpolicies"),
			obj: `{"metadata":{"name":"np1"},"spec":{"podSelector":{}}}`, patch: `{"spec":{"podSelector":{"matchLabels":{"app":"a"}}}}`},
		{name: "NetworkPolicy rich", gvr: gvr("networking.k8s.io", "v1", "networkpolicies"),
			obj: `{"metadata":{"name":"np2"},"spec":{"podSelector":{"matchLabels":{"app":"a"}},` +
				`"ingress":[{"from":[{"podSelector":{}}],"ports":[{"port":80},{"port":"dns","protocol":"UDP"}]}],"egress":[{"ports":[{"port":443}]}]}}`},
		{name: "Role", gvr: gvr("rbac.authorization.k8s.io", "v1", "roles"),
			obj: `{"metadata":{"name":"system:reader"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}]}`},
		{name: "ClusterRole", gvr: gvr("rbac.authorization.k8s.io", "v1", "clusterroles"), cluster: true,
			obj: `{"metadata":{"name":"` + ns + `:reader"},"rules":[{"nonResourceURLs":["/healthz"],"verbs":["get"]},{"apiGroups":["apps"],"resources":["*"],"verbs":["*"]}]}`},
		{name: "RoleBinding", gvr: gvr("rbac.authorization.k8s.io", "v1", "rolebindings"),
			obj: `{"metadata":{"name":"rb"},"roleRef":{"kind":"Role","name":"system:reader"},` +
				`"subjects":[{"kind":"User","name":"alice"},{"kind":"Group","name":"devs"},{"kind":"ServiceAccount","name":"builder"}]}`},
		{name: "ClusterRoleBinding", gvr: gvr("rbac.authorization.k8s.io", "v1", "clusterrolebindings"), cluster: true,
			obj: `{"metadata":{"name":"` + ns + `:crb"},"roleRef":{"kind":"ClusterRole","name":"` + ns + `:reader","apiGroup":"rbac.authorization.k8s.io"},` +
				`"subjects":[{"kind":"ServiceAccount","name":"builder","namespace":"` + ns + `"}]}`},
		{name: "Lease", gvr: gvr("coordination.k8s.io", "v1", "leases"),
			obj:   `{"metadata":{"name":"lock"},"spec":{"holderIdentity":"me","leaseDurationSeconds":15,"renewTime":"2026-01-01T00:00:00.000000Z"}}`,
			patch: `{"spec":{"leaseTransitions":1}}`},
		{name: "EndpointSlice", gvr: gvr("discovery.k8s.io", "v1", "endpointslices"),
			obj: `{"metadata":{"name":"svc1-abc","labels":{"kubernetes.io/service-name":"svc1"}},"addressType":"IPv4",` +
				`"endpoints":[{"addresses":["10.1.0.1"],"conditions":{"ready":true}}],"ports":[{"port":80}]}`,
			patch: `{"endpoints":[{"addresses":["10.1.0.2"]}]}`},
	}
}

func kindErrorCases(ns string) []kindErrorCase {
	sel := `{"matchLabels":{"app":"a"}}`
	jobTmpl := strings.Replace(kindsTemplate, `"containers"`, `"restartPolicy":"Never","containers"`, 1)
	sts := `{"metadata":{"name":"bad-sts"},"spec":{"serviceName":"db","selector":` + sel + `,"template":` + kindsTemplate +
		`,"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`
	return []kindErrorCase{
		{name: "Deployment without selector", gvr: gvr("apps", "v1", "deployments"),
			bad: `{"metadata":{"name":"bad-d0"},"spec":{"template":` + kindsTemplate + `}}`},
		{name: "StatefulSet without selector", gvr: gvr("apps", "v1", "statefulsets"),
			bad: `{"metadata":{"name":"bad-sts0"},"spec":{"template":` + kindsTemplate + `}}`},
		{name: "StatefulSet with an unmatched selector", gvr: gvr("apps", "v1", "statefulsets"),
			bad: `{"metadata":{"name":"bad-sts1"},"spec":{"selector":{"matchLabels":{"app":"b"}},"template":` + kindsTemplate + `}}`},
		{name: "StatefulSet name with a dot", gvr: gvr("apps", "v1", "statefulsets"),
			bad: `{"metadata":{"name":"a.b"},"spec":{"selector":` + sel + `,"template":` + kindsTemplate + `}}`},
		{name: "StatefulSet selector change", gvr: gvr("apps", "v1", "statefulsets"), obj: sts,
			bad: `{"spec":{"selector":{"matchLabels":{"app":"a","x":"y"}},"template":{"metadata":{"labels":{"x":"y"}}}}}`},
		{name: "StatefulSet serviceName change", gvr: gvr("apps", "v1", "statefulsets"), obj: sts, bad: `{"spec":{"serviceName":"other"}}`},
		{name: "StatefulSet podManagementPolicy change", gvr: gvr("apps", "v1", "statefulsets"), obj: sts, bad: `{"spec":{"podManagementPolicy":"Parallel"}}`},
		{name: "StatefulSet volumeClaimTemplates change", gvr: gvr("apps", "v1", "statefulsets"), obj: sts,
			bad: `{"spec":{"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"2Gi"}}}}]}}`},
		{name: "DaemonSet with an empty selector", gvr: gvr("apps", "v1", "daemonsets"),
			bad: `{"metadata":{"name":"bad-ds0"},"spec":{"selector":{},"template":` + kindsTemplate + `}}`},
		{name: "DaemonSet selector change", gvr: gvr("apps", "v1", "daemonsets"),
			obj: `{"metadata":{"name":"bad-ds"},"spec":{"selector":` + sel + `,"template":` + kindsTemplate + `}}`,
			bad: `{"spec":{"selector":{"matchLabels":{"app":"a","x":"y"}},"template":{"metadata":{"labels":{"x":"y"}}}}}`},
		{name: "ControllerRevision data change", gvr: gvr("apps", "v1", "controllerrevisions"),
			obj: `{"metadata":{"name":"bad-cr"},"data":{"a":1},"revision":1}`, bad: `{"data":{"a":2}}`},
		{name: "ControllerRevision without data", gvr: gvr("apps", "v1", "controllerrevisions"),
			bad: `{"metadata":{"name":"bad-cr0"},"revision":1}`},
		{name: "Job with restartPolicy Always", gvr: gvr("batch", "v1", "jobs"),
			bad: `{"metadata":{"name":"bad-job0"},"spec":{"template":` + kindsTemplate + `}}`},
		{name: "Job template change", gvr: gvr("batch", "v1", "jobs"),
			obj: `{"metadata":{"name":"bad-job"},"spec":{"template":` + jobTmpl + `}}`,
			bad: `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}`},
		{name: "Job completions change", gvr: gvr("batch", "v1", "jobs"),
			obj: `{"metadata":{"name":"bad-job2"},"spec":{"template":` + jobTmpl + `}}`, bad: `{"spec":{"completions":3}}`},
		{name: "Job manual selector change", gvr: gvr("batch", "v1", "jobs"),
			obj: `{"metadata":{"name":"bad-job3"},"spec":{"manualSelector":true,"selector":` + sel + `,"template":` + jobTmpl + `}}`,
			bad: `{"spec":{"selector":{"matchLabels":{"app":"b"}}}}`},
		{name: "Job with a foreign controller-uid", gvr: gvr("batch", "v1", "jobs"),
			bad: `{"metadata":{"name":"bad-job4"},"spec":{"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"x"}},"template":` + jobTmpl + `}}`},
		{name: "CronJob bad schedule", gvr: gvr("batch", "v1", "cronjobs"),
			bad: `{"metadata":{"name":"bad-cj0"},"spec":{"schedule":"* * *","jobTemplate":{"spec":{"template":` + jobTmpl + `}}}}`},
		{name: "CronJob schedule out of range", gvr: gvr("batch", "v1", "cronjobs"),
			bad: `{"metadata":{"name":"bad-cj1"},"spec":{"schedule":"61 * * * *","jobTemplate":{"spec":{"template":` + jobTmpl + `}}}}`},
		{name: "CronJob name too long", gvr: gvr("batch", "v1", "cronjobs"),
			bad: `{"metadata":{"name":"` + strings.Repeat("c", 53) + `"},"spec":{"schedule":"@daily","jobTemplate":{"spec":{"template":` + jobTmpl + `}}}}`},
		{name: "PersistentVolumeClaim without access modes", gvr: gvr("", "v1", "persistentvolumeclaims"),
			bad: `{"metadata":{"name":"bad-pvc0"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`},
		{name: "PersistentVolumeClaim storage class set once", gvr: gvr("", "v1", "persistentvolumeclaims"),
			obj: `{"metadata":{"name":"bad-pvc0"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
			bad: `{"spec":{"storageClassName":"other"}}`}, // accepted: a class may be set once
		{name: "PersistentVolumeClaim spec change", gvr: gvr("", "v1", "persistentvolumeclaims"),
			obj: `{"metadata":{"name":"bad-pvc"},"spec":{"storageClassName":"a","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
			bad: `{"spec":{"storageClassName":"b"}}`},
		{name: "PersistentVolume without a source", gvr: gvr("", "v1", "persistentvolumes"), cluster: true,
			bad: `{"metadata":{"name":"` + ns + `-bad-pv0"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"]}}`},
		{name: "PersistentVolume source change", gvr: gvr("", "v1", "persistentvolumes"), cluster: true,
			obj: `{"metadata":{"name":"` + ns + `-bad-pv"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/a"}}}`,
			bad: `{"spec":{"hostPath":{"path":"/b"}}}`},
		{name: "Service without ports", gvr: gvr("", "v1", "services"), bad: `{"metadata":{"name":"bad-svc0"},"spec":{}}`},
		{name: "Service with unnamed ports", gvr: gvr("", "v1", "services"),
			bad: `{"metadata":{"name":"bad-svc1"},"spec":{"ports":[{"port":80},{"port":81}]}}`},
		{name: "Service clusterIP change", gvr: gvr("", "v1", "services"),
			obj: `{"metadata":{"name":"bad-svc"},"spec":{"ports":[{"port":80}]}}`, bad: `{"spec":{"clusterIP":"10.0.0.250","clusterIPs":["10.0.0.250"]}}`},
		{name: "ConfigMap immutable data change", gvr: gvr("", "v1", "configmaps"),
			obj: `{"metadata":{"name":"bad-cm"},"immutable":true,"data":{"a":"1"}}`, bad: `{"data":{"a":"2"}}`},
		{name: "ConfigMap bad key", gvr: gvr("", "v1", "configmaps"), bad: `{"metadata":{"name":"bad-cm0"},"data":{"a/b":"1"}}`},
		{name: "Secret type change", gvr: gvr("", "v1", "secrets"),
			obj: `{"metadata":{"name":"bad-s"},"data":{"a":"YQ=="}}`, bad: `{"type":"kubernetes.io/basic-auth","data":{"username":"dQ=="}}`},
		{name: "Secret TLS without key", gvr: gvr("", "v1", "secrets"),
			bad: `{"metadata":{"name":"bad-s0"},"type":"kubernetes.io/tls","data":{"tls.crt":"Yw=="}}`},
		{name: "Event namespace mismatch", gvr: gvr("", "v1", "events"),
			bad: `{"metadata":{"name":"bad-e"},"involvedObject":{"kind":"Pod","name":"p","namespace":"other"},"reason":"R"}`},
		{name: "ReplicationController without template", gvr: gvr("", "v1", "replicationcontrollers"),
			bad: `{"metadata":{"name":"bad-rc0"},"spec":{"selector":{"app":"a"}}}`},
		{name: "HorizontalPodAutoscaler without maxReplicas", gvr: gvr("autoscaling", "v2", "horizontalpodautoscalers"),
			bad: `{"metadata":{"name":"bad-hpa0"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"d"},"minReplicas":0}}`},
		{name: "HorizontalPodAutoscaler below its minimum", gvr: gvr("autoscaling", "v2", "horizontalpodautoscalers"),
			bad: `{"metadata":{"name":"bad-hpa1"},"spec":{"scaleTargetRef":{"apiVersion":"v1","kind":"ReplicationController","name":"r"},"minReplicas":4,"maxReplicas":2}}`},
		{name: "Ingress without backend or rules", gvr: gvr("networking.k8s.io", "v1", "ingresses"),
			bad: `{"metadata":{"name":"bad-ing0"},"spec":{}}`},
		{name: "Ingress path without type", gvr: gvr("networking.k8s.io", "v1", "ingresses"),
			bad: `{"metadata":{"name":"bad-ing1"},"spec":{"rules":[{"http":{"paths":[{"path":"/","backend":{"service":{"name":"s","port":{"number":80}}}}]}}]}}`},
		{name: "IngressClass controller change", gvr: gvr("networking.k8s.io", "v1", "ingressclasses"), cluster: true,
			obj: `{"metadata":{"name":"` + ns + `-bad-ic"},"spec":{"controller":"example.com/a"}}`, bad: `{"spec":{"controller":"example.com/b"}}`},
		{name: "Role rule without verbs", gvr: gvr("rbac.authorization.k8s.io", "v1", "roles"),
			bad: `{"metadata":{"name":"bad-role0"},"rules":[{"apiGroups":[""],"resources":["pods"]}]}`},
		{name: "RoleBinding roleRef change", gvr: gvr("rbac.authorization.k8s.io", "v1", "rolebindings"),
			obj: `{"metadata":{"name":"bad-rb"},"roleRef":{"kind":"Role","name":"a"},"subjects":[{"kind":"User","name":"u"}]}`,
			bad: `{"roleRef":{"name":"b"}}`},
		{name: "RoleBinding bad kinds", gvr: gvr("rbac.authorization.k8s.io", "v1", "rolebindings"),
			bad: `{"metadata":{"name":"bad-rb0"},"roleRef":{"kind":"Pod","name":"a"},"subjects":[{"kind":"Robot","name":"r"}]}`},
		{name: "EndpointSlice addressType change", gvr: gvr("discovery.k8s.io", "v1", "endpointslices"),
			obj: `{"metadata":{"name":"bad-es"},"addressType":"IPv4","endpoints":[]}`, bad: `{"addressType":"FQDN"}`},
	}
}

// kindsRun runs the cases on one side.
type kindsRun struct {
	t    *testing.T
	ctx  context.Context
	dyn  dynamic.Interface
	ns   string
	uids map[string]bool // of the objects created, replaced in the answers
}

func (k *kindsRun) client(r schema.GroupVersionResource, cluster bool) dynamic.ResourceInterface {
	if cluster {
		return k.dyn.Resource(r)
	}
	return k.dyn.Resource(r).Namespace(k.ns)
}

func (k *kindsRun) create(r schema.GroupVersionResource, cluster bool, obj string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(obj), &u.Object); err != nil {
		k.t.Fatalf("bad test object %s: %v", obj, err)
	}
	gv := r.GroupVersion().String()
	u.SetAPIVersion(gv)
	u.SetKind(kindOf(r.Resource))
	out, err := k.client(r, cluster).Create(k.ctx, u, metav1.CreateOptions{})
	if err == nil {
		k.uids[string(out.GetUID())] = true
	}
	return out, err
}

type kindStep struct{ name, answer string }

// run creates c's object, writes its status and updates it: the answers
// of each step, normalised.
func (k *kindsRun) run(c kindCase) []kindStep {
	created, err := k.create(c.gvr, c.cluster, c.obj)
	steps := []kindStep{{c.name + ": create", k.answer(created, err)}}
	if err != nil {
		return steps
	}
	cl := k.client(c.gvr, c.cluster)
	if c.status != "" {
		cur, err := cl.Get(k.ctx, created.GetName(), metav1.GetOptions{})
		if err != nil {
			k.t.Fatal(err)
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(c.status), &st); err != nil {
			k.t.Fatalf("bad status %s: %v", c.status, err)
		}
		cur.Object["status"] = st
		l := cur.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["written"] = "status"
		cur.SetLabels(l)
		// A spec change in a status write is ignored.
		if spec, ok := cur.Object["spec"].(map[string]any); ok {
			spec["ignoredBy"] = "status"
		}
		out, err := cl.UpdateStatus(k.ctx, cur, metav1.UpdateOptions{})
		steps = append(steps, kindStep{c.name + ": status", k.answer(out, err)})
	}
	if c.patch != "" {
		out, err := cl.Patch(k.ctx, created.GetName(), types.MergePatchType, []byte(c.patch), metav1.PatchOptions{})
		steps = append(steps, kindStep{c.name + ": update", k.answer(out, err)})
	}
	if c.put != "" {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(c.put), &u.Object); err != nil {
			k.t.Fatalf("bad test object %s: %v", c.put, err)
		}
		u.SetAPIVersion(c.gvr.GroupVersion().String())
		u.SetKind(kindOf(c.gvr.Resource))
		if !c.cluster {
			u.SetNamespace(k.ns)
		}
		out, err := cl.Update(k.ctx, u, metav1.UpdateOptions{})
		steps = append(steps, kindStep{c.name + ": replace", k.answer(out, err)})
	}
	got, err := cl.Get(k.ctx, created.GetName(), metav1.GetOptions{})
	steps = append(steps, kindStep{c.name + ": get", k.answer(got, err)})
	return steps
}

// invalid runs an error case: the answer is the error's code, reason and
// causes (type and field, sorted), or the object if it was accepted.
func (k *kindsRun) invalid(c kindErrorCase) string {
	if c.obj == "" {
		out, err := k.create(c.gvr, c.cluster, c.bad)
		return k.answer(out, err)
	}
	created, err := k.create(c.gvr, c.cluster, c.obj)
	if err != nil {
		return "setup failed: " + k.answer(created, err)
	}
	out, err := k.client(c.gvr, c.cluster).Patch(k.ctx, created.GetName(), types.MergePatchType, []byte(c.bad), metav1.PatchOptions{})
	return k.answer(out, err)
}

func (k *kindsRun) answer(obj *unstructured.Unstructured, err error) string {
	if err != nil {
		st, ok := err.(apierrors.APIStatus)
		if !ok {
			return "error: " + err.Error()
		}
		s := st.Status()
		var causes []string
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				causes = append(causes, fmt.Sprintf("%s %s", c.Type, c.Field))
			}
		}
		sort.Strings(causes)
		return fmt.Sprintf("%d %s %v", s.Code, s.Reason, causes)
	}
	b, err := json.MarshalIndent(kindsNormalize(obj.Object, k.uids), "", "  ")
	if err != nil {
		k.t.Fatal(err)
	}
	return string(b)
}

// kindsNormalize removes what must differ between two API servers: the
// uid (also where the server copied it, as a Job's selector), the
// resourceVersion, timestamps the server sets (the managedFields' too,
// whose entries are compared in an order of their own), and what is
// allocated from a range (cluster IPs, node ports).
func kindsNormalize(obj map[string]any, uids map[string]bool) any {
	b, _ := json.Marshal(obj)
	s := string(b)
	for uid := range uids {
		s = strings.ReplaceAll(s, uid, "UID")
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(s), &out)
	md, _ := out["metadata"].(map[string]any)
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp"} {
		delete(md, f)
	}
	if mf, ok := md["managedFields"].([]any); ok {
		// Without their times, which differ, and so in an order that does
		// not depend on them (kube-apiserver sorts by time in seconds
		// first, and a case's writes may straddle a second there).
		key := func(e any) string {
			em, _ := e.(map[string]any)
			return fmt.Sprint(em["operation"], " ", em["manager"], " ", em["apiVersion"], " ", em["subresource"])
		}
		for _, e := range mf {
			if em, ok := e.(map[string]any); ok {
				delete(em, "time")
			}
		}
		sort.SliceStable(mf, func(i, j int) bool { return key(mf[i]) < key(mf[j]) })
	}
	if spec, ok := out["spec"].(map[string]any); ok {
		if ip, ok := spec["clusterIP"].(string); ok && ip != "None" {
			spec["clusterIP"] = "IP"
			spec["clusterIPs"] = []any{"IP"}
		}
		if ports, ok := spec["ports"].([]any); ok {
			for _, p := range ports {
				if pm, ok := p.(map[string]any); ok && pm["nodePort"] != nil {
					pm["nodePort"] = "PORT"
				}
			}
		}
	}
	if st, ok := out["status"].(map[string]any); ok && st["lastPhaseTransitionTime"] != nil {
		st["lastPhaseTransitionTime"] = "TIME"
	}
	withoutUndoneAdmission(out)
	return out
}

// withoutUndoneAdmission removes what two admission plugins of
// kube-apiserver add and only controllers memcluster does not run take
// away: StorageObjectInUseProtection's finalizers of PersistentVolumes
// and their claims (removed by the pv- and pvc-protection controllers)
// and TaintNodesByCondition's not-ready taint of a new Node (removed by
// the node lifecycle controller). memcluster leaves them out, so deleting
// a claim does not hang as it does in envtest (see memcluster's package
// documentation).
func withoutUndoneAdmission(obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	if fs, ok := md["finalizers"].([]any); ok {
		fs = slices.DeleteFunc(fs, func(f any) bool { return f == "kubernetes.io/pvc-protection" || f == "kubernetes.io/pv-protection" })
		if len(fs) == 0 {
			delete(md, "finalizers")
		} else {
			md["finalizers"] = fs
		}
	}
	if obj["kind"] != "Node" {
		return
	}
	spec, _ := obj["spec"].(map[string]any)
	if ts, ok := spec["taints"].([]any); ok {
		ts = slices.DeleteFunc(ts, func(t any) bool {
			m, _ := t.(map[string]any)
			return m["key"] == "node.kubernetes.io/not-ready" && m["effect"] == "NoSchedule" && m["timeAdded"] == nil
		})
		if len(ts) == 0 {
			delete(spec, "taints")
		} else {
			spec["taints"] = ts
		}
	}
}

// kindOf is the kind of a resource of the cases.
func kindOf(resource string) string {
	special := map[string]string{
		"endpoints": "Endpoints", "ingresses": "Ingress", "ingressclasses": "IngressClass", "networkpolicies": "NetworkPolicy",
		"horizontalpodautoscalers": "HorizontalPodAutoscaler", "persistentvolumeclaims": "PersistentVolumeClaim",
		"persistentvolumes": "PersistentVolume", "replicationcontrollers": "ReplicationController", "statefulsets": "StatefulSet",
		"daemonsets": "DaemonSet", "controllerrevisions": "ControllerRevision", "cronjobs": "CronJob", "configmaps": "ConfigMap",
		"serviceaccounts": "ServiceAccount", "rolebindings": "RoleBinding", "clusterrolebindings": "ClusterRoleBinding",
		"clusterroles": "ClusterRole", "endpointslices": "EndpointSlice", "replicasets": "ReplicaSet",
	}
	if k, ok := special[resource]; ok {
		return k
	}
	return strings.ToUpper(resource[:1]) + strings.TrimSuffix(resource[1:], "s")
}

// kindsDiscovery returns the discovery entries of the resources
// memcluster.AddBuiltinKinds serves, by group version and name (verbs
// sorted; subresources memcluster does not serve left out).
func kindsDiscovery(t *testing.T, d *discovery.DiscoveryClient) map[string]metav1.APIResource {
	want := map[string][]string{
		"v1": {"pods", "pods/status", "services", "services/status", "endpoints", "configmaps", "secrets", "serviceaccounts", "events",
			"persistentvolumeclaims", "persistentvolumeclaims/status", "persistentvolumes", "persistentvolumes/status", "nodes", "nodes/status",
			"replicationcontrollers", "replicationcontrollers/status", "replicationcontrollers/scale"},
		"apps/v1": {"deployments", "deployments/status", "deployments/scale", "replicasets", "replicasets/status", "replicasets/scale",
			"statefulsets", "statefulsets/status", "statefulsets/scale", "daemonsets", "daemonsets/status", "controllerrevisions"},
		"batch/v1":                     {"jobs", "jobs/status", "cronjobs", "cronjobs/status"},
		"autoscaling/v2":               {"horizontalpodautoscalers", "horizontalpodautoscalers/status"},
		"networking.k8s.io/v1":         {"ingresses", "ingresses/status", "ingressclasses", "networkpolicies"},
		"rbac.authorization.k8s.io/v1": {"roles", "clusterroles", "rolebindings", "clusterrolebindings"},
		"coordination.k8s.io/v1":       {"leases"},
		"discovery.k8s.io/v1":          {"endpointslices"},
		"events.k8s.io/v1":             {"events"},
	}
	out := map[string]metav1.APIResource{}
	for gv, names := range want {
		list, err := d.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		for _, r := range list.APIResources {
			if !slices.Contains(names, r.Name) {
				continue
			}
			r.Verbs = slices.Sorted(slices.Values(r.Verbs))
			r.StorageVersionHash = ""
			out[gv+" "+r.Name] = r
		}
		for _, n := range names {
			if _, ok := out[gv+" "+n]; !ok {
				out[gv+" "+n] = metav1.APIResource{Name: n + " (missing)"}
			}
		}
	}
	return out
}
