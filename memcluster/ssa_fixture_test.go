package memcluster

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// testSchemas is a hand-written OpenAPI (v2) schema of the parts of
// apps/v1 Deployments and ReplicaSets (whose spec it shares), core/v1
// Pods and ConfigMaps that the
// server-side apply tests use, with kube-apiserver's list and map
// semantics (containers merge by name, ports by containerPort and
// protocol, env by name, conditions by type, owner references by uid,
// finalizers as a set, label selectors atomic). Fields it does not
// declare are kept as deduced ones (testTypeConverter preserves unknown
// fields), so defaulted objects convert.
const testSchemas = `{
"io.k8s.api.apps.v1.Deployment": {"type": "object",
  "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}],
  "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
    "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
    "spec": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"},
    "status": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentStatus"}}},
"io.k8s.api.apps.v1.ReplicaSet": {"type": "object",
  "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "ReplicaSet", "version": "v1"}],
  "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
    "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
    "spec": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"},
    "status": {"type": "object"}}},
"io.k8s.api.apps.v1.DeploymentSpec": {"type": "object",
  "properties": {"replicas": {"type": "integer"}, "paused": {"type": "boolean"},
    "selector": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"},
    "template": {"$ref": "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"}}},
"io.k8s.api.apps.v1.DeploymentStatus": {"type": "object",
  "properties": {"replicas": {"type": "integer"}, "readyReplicas": {"type": "integer"},
    "availableReplicas": {"type": "integer"}, "updatedReplicas": {"type": "integer"},
    "observedGeneration": {"type": "integer"},
    "conditions": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentCondition"},
      "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}}},
"io.k8s.api.apps.v1.DeploymentCondition": {"type": "object",
  "properties": {"type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"}, "message": {"type": "string"}},
  "required": ["type", "status"]},
"io.k8s.api.core.v1.PodTemplateSpec": {"type": "object",
  "properties": {"metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
    "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec"}}},
"io.k8s.api.core.v1.Pod": {"type": "object",
  "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}],
  "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
    "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
    "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec"},
    "status": {"$ref": "#/definitions/io.k8s.api.core.v1.PodStatus"}}},
"io.k8s.api.core.v1.PodSpec": {"type": "object",
  "properties": {"nodeName": {"type": "string"},
    "containers": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Container"},
      "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}}},
"io.k8s.api.core.v1.Container": {"type": "object",
  "properties": {"name": {"type": "string"}, "image": {"type": "string"}, "imagePullPolicy": {"type": "string"},
    "args": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
    "ports": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.ContainerPort"},
      "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["containerPort", "protocol"]},
    "env": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.EnvVar"},
      "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}},
  "required": ["name"]},
"io.k8s.api.core.v1.ContainerPort": {"type": "object",
  "properties": {"name": {"type": "string"}, "containerPort": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}},
  "required": ["containerPort"]},
"io.k8s.api.core.v1.EnvVar": {"type": "object",
  "properties": {"name": {"type": "string"}, "value": {"type": "string"}}, "required": ["name"]},
"io.k8s.api.core.v1.PodStatus": {"type": "object",
  "properties": {"phase": {"type": "string"}, "podIP": {"type": "string"},
    "conditions": {"type": "array", "items": {"type": "object", "properties": {"type": {"type": "string"}, "status": {"type": "string"}}},
      "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}}},
"io.k8s.api.core.v1.ConfigMap": {"type": "object",
  "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}],
  "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
    "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
    "data": {"type": "object", "additionalProperties": {"type": "string"}}}},
"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object",
  "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}, "generateName": {"type": "string"},
    "uid": {"type": "string"}, "resourceVersion": {"type": "string"}, "generation": {"type": "integer"},
    "creationTimestamp": {"type": "string"}, "deletionTimestamp": {"type": "string"},
    "deletionGracePeriodSeconds": {"type": "integer"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
    "ownerReferences": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"},
      "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"]},
    "managedFields": {"type": "array", "items": {"type": "object"}}}},
"io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": {"type": "object",
  "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string"}, "uid": {"type": "string"},
    "controller": {"type": "boolean"}, "blockOwnerDeletion": {"type": "boolean"}},
  "required": ["uid"], "x-kubernetes-map-type": "atomic"},
"io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector": {"type": "object",
  "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}},
  "x-kubernetes-map-type": "atomic"}
}`

// testTypeConverter returns a type converter of testSchemas.
func testTypeConverter(t testing.TB) managedfields.TypeConverter {
	t.Helper()
	var defs map[string]*spec.Schema
	if err := json.Unmarshal([]byte(testSchemas), &defs); err != nil {
		t.Fatal(err)
	}
	tc, err := managedfields.NewTypeConverter(defs, true)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// newSSACluster returns a cluster on a fake clock at t0 that tracks
// managedFields with testTypeConverter.
func newSSACluster(t *testing.T) *Cluster {
	t.Helper()
	c := New(Config{Clock: newFake(), Seed: 1, TypeConverter: testTypeConverter(t)})
	addCoreKinds(c)
	return c
}

// fieldsOf summarises managedFields as "manager/operation[/subresource]:
// fieldsV1" lines, for comparisons.
func fieldsOf(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		if e.FieldsV1 != nil {
			s += ": " + string(e.FieldsV1.Raw)
		}
		out = append(out, s)
	}
	return out
}
