// Package crd serves CustomResourceDefinitions on ctrlkit's in-memory API
// server (memcluster) the way kube-apiserver does, with
// k8s.io/apiextensions-apiserver's own packages: a CRD your operator
// ships is installed as envtest installs it, and its custom resources are
// validated, defaulted and pruned by its schema, with kube-apiserver's
// messages and field paths.
//
// # What is served
//
// [Serve] adds the apiextensions.k8s.io/v1 CustomResourceDefinition kind.
// A CRD created through the API (or with [Server.Install]) is defaulted and
// validated by apiextensions-apiserver's registry strategy, gets its
// status (storedVersions, acceptedNames, NamesAccepted and Established),
// and its kind is served at once, in every served version. Updates (new
// versions, new schemas, new names) apply at once and keep the objects;
// deleting a CRD runs kube-apiserver's cleanup (the
// customresourcecleanup.apiextensions.k8s.io finalizer, the Terminating
// condition, the objects deleted, their finalizers honoured).
//
// Custom resources go through what kube-apiserver does with each
// version's schema:
//
//   - decoding: unknown fields pruned (except under
//     x-kubernetes-preserve-unknown-fields), nulls the schema does not allow
//     dropped, metadata and the metadata of embedded resources coerced;
//     then the defaults;
//   - validation by apiextensions-apiserver's strategy for custom
//     resources: metadata, the OpenAPI schema (types, formats, patterns,
//     enums, bounds, int-or-string, nullable, embedded resources), list
//     types and map keys, x-kubernetes-validations CEL rules with their
//     messages, messageExpression, reason, fieldPath, transition rules
//     (oldSelf) and kube-apiserver's cost limits, validation ratcheting of
//     updates, the scale subresource's fields; the status subresource's
//     writes against the status schema;
//   - several versions with one storage version (conversion strategy
//     None): objects are stored in the storage version and read in the
//     request's, as kube-apiserver reads from etcd;
//   - server-side apply and managedFields: each kind's TypeConverter is
//     built from the CRD's OpenAPI schema as kube-apiserver builds it
//     (apiextensions-apiserver's OpenAPI builder, then
//     managedfields.NewTypeConverter), at its first use, so lists of type
//     map merge by their keys and sets by value;
//   - field selectors: metadata.name, metadata.namespace and each
//     version's selectableFields.
//
// The side-by-side tests of controllerruntime/e2e send the same requests to
// kube-apiserver v1.37.1 and to a memcluster served by this package and
// compare the answers: the status code, message, causes and the object
// stored.
//
// # Differences from kube-apiserver
//
// What kube-apiserver's controllers do a moment after a CRD is written
// happens inside the write: the answer to a create has no conditions, the
// next read has them (NamesAccepted and Established in one status write,
// where kube-apiserver makes two), and the kind is served before the
// create returns. Conversion webhooks are not called (such a CRD is served
// in its storage version only). Warnings (unknown fields, deprecated
// versions) are not sent. Server-side apply is served in the storage
// version only, writes in another version record their managedFields
// under the storage version's apiVersion, and scale writes record none. The
// KubernetesAPIApprovalPolicyConformant
// condition of *.k8s.io groups is not set. A status write that drops the
// storage version from storedVersions gets it back instead of a 422.
//
// # The test bench
//
// clustertest.Options takes CRDs as envtest does, and installs them with
// [Bench] before the test's function runs:
//
//	clustertest.Test(t, clustertest.Options{
//		Scheme:            scheme,
//		CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")},
//	}, func(t *testing.T, c *clustertest.Cluster) { ... })
package crd
