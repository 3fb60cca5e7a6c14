//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// manifests holds the objects of deploy/rbac.yaml and deploy/deployment.yaml.
type manifests struct {
	sa          *corev1.ServiceAccount
	clusterRole *rbacv1.ClusterRole
	role        *rbacv1.Role
	rest        []runtime.Object // the bindings and the metrics reader role
	args        []string         // of the Deployment's container
}

func readManifests(t *testing.T) manifests {
	t.Helper()
	var m manifests
	for _, file := range []string{"../deploy/rbac.yaml", "../deploy/deployment.yaml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufioReader(b))
		for {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(js)) == "null" {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(js, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			switch o := obj.(type) {
			case *corev1.ServiceAccount:
				m.sa = o
			case *rbacv1.ClusterRole:
				if o.Name == "ctrlkit-controller" {
					m.clusterRole = o
				} else {
					m.rest = append(m.rest, o)
				}
			case *rbacv1.Role:
				m.role = o
			case *appsv1.Deployment:
				m.args = o.Spec.Template.Spec.Containers[0].Args
			case *corev1.Service: // not needed to run the binary
			default:
				m.rest = append(m.rest, o)
			}
		}
	}
	if m.sa == nil || m.clusterRole == nil || m.role == nil || m.args == nil {
		t.Fatalf("deploy/: want a ServiceAccount, the ctrlkit-controller ClusterRole, a Role and a Deployment")
	}
	return m
}

// saKubeconfig writes a kubeconfig for the ServiceAccount ns/name, with a
// token from the TokenRequest API.
func saKubeconfig(t *testing.T, e *env, ns, name string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: cp.Server, CertificateAuthority: filepath.Join(cp.Dir, "certs", "apiserver.crt")}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: saToken(t, e, ns, name)}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func saToken(t *testing.T, e *env, ns, name string) string {
	t.Helper()
	tr, err := e.cs.CoreV1().ServiceAccounts(ns).CreateToken(e.ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func upsertClusterRole(e *env, r *rbacv1.ClusterRole) error {
	cur, err := e.cs.RbacV1().ClusterRoles().Get(e.ctx, r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = e.cs.RbacV1().ClusterRoles().Create(e.ctx, r, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cur.Rules = r.Rules
	_, err = e.cs.RbacV1().ClusterRoles().Update(e.ctx, cur, metav1.UpdateOptions{})
	return err
}

func upsertRole(e *env, r *rbacv1.Role) error {
	cur, err := e.cs.RbacV1().Roles(r.Namespace).Get(e.ctx, r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = e.cs.RbacV1().Roles(r.Namespace).Create(e.ctx, r, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cur.Rules = r.Rules
	_, err = e.cs.RbacV1().Roles(r.Namespace).Update(e.ctx, cur, metav1.UpdateOptions{})
	return err
}

func ruleEqual(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs)
}

// waitAccess waits until the apiserver's answer to whether user may use
// the first verb of rule on its first resource in ns is want.
func waitAccess(t *testing.T, e *env, user, ns string, rule rbacv1.PolicyRule, want bool) {
	t.Helper()
	res, sub, _ := strings.Cut(rule.Resources[0], "/")
	deadline := time.Now().Add(30 * time.Second)
	for {
		sar, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(e.ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: rule.APIGroups[0], Resource: res,
					Subresource: sub, Verb: rule.Verbs[0]}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s %v not %v within 30s", user, rule.Verbs[0], rule.Resources, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventCount returns the highest count of an event about the Deployment
// name.
func (e *env) eventCount(name string) int32 {
	evs, err := e.cs.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	var n int32
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Kind == "Deployment" && ev.InvolvedObject.Name == name {
			n = max(n, ev.Count)
		}
	}
	return n
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
