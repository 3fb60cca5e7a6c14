//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
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

// TestDeployRBAC applies deploy/rbac.yaml to the RBAC-enforcing apiserver
// and runs ctrlkit-controller with the Deployment's arguments and only the
// ServiceAccount's token: it rolls a Deployment out (create, new image
// with revisionHistoryLimit 0, a repeated scale, a rollback) and serves an
// authorized scrape, without one "forbidden". Then, for each rule of the
// ClusterRole and the Role in turn, it removes that rule and checks that
// the same run fails with a "forbidden" error naming the rule's resource
// (or the scrape is refused): every rule is needed.
func TestDeployRBAC(t *testing.T) {
	bin := buildController(t)
	m := readManifests(t)
	e := newEnv(t, envOptions{noOperator: true, readyDelay: 100 * time.Millisecond})
	ctx := e.ctx
	del := func(f func() error) {
		if err := f(); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	bg := context.Background()
	if _, err := e.cs.CoreV1().ServiceAccounts(m.sa.Namespace).Create(ctx, m.sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		del(func() error {
			return e.cs.CoreV1().ServiceAccounts(m.sa.Namespace).Delete(bg, m.sa.Name, metav1.DeleteOptions{})
		})
	})
	for _, obj := range m.rest {
		switch o := obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			if _, err := e.cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				del(func() error { return e.cs.RbacV1().ClusterRoleBindings().Delete(bg, o.Name, metav1.DeleteOptions{}) })
			})
		case *rbacv1.RoleBinding:
			if _, err := e.cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				del(func() error {
					return e.cs.RbacV1().RoleBindings(o.Namespace).Delete(bg, o.Name, metav1.DeleteOptions{})
				})
			})
		case *rbacv1.ClusterRole: // the metrics reader, bound to the test's own scraper below
			if _, err := e.cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			scraper := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: o.Name + "-test"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: o.Name},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: "scraper"}}}
			if _, err := e.cs.RbacV1().ClusterRoleBindings().Create(ctx, scraper, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				del(func() error {
					return e.cs.RbacV1().ClusterRoleBindings().Delete(bg, scraper.Name, metav1.DeleteOptions{})
				})
				del(func() error { return e.cs.RbacV1().ClusterRoles().Delete(bg, o.Name, metav1.DeleteOptions{}) })
			})
		default:
			t.Fatalf("unexpected object in deploy/: %T", obj)
		}
	}
	if _, err := e.cs.CoreV1().ServiceAccounts(e.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		del(func() error {
			return e.cs.RbacV1().ClusterRoles().Delete(bg, m.clusterRole.Name, metav1.DeleteOptions{})
		})
		del(func() error {
			return e.cs.RbacV1().Roles(m.role.Namespace).Delete(bg, m.role.Name, metav1.DeleteOptions{})
		})
		del(func() error {
			return e.cs.CoordinationV1().Leases(m.role.Namespace).Delete(bg, "ctrlkit-controller", metav1.DeleteOptions{})
		})
	})
	kubeconfig := saKubeconfig(t, e, m.sa.Namespace, m.sa.Name)
	scraper := saToken(t, e, e.ns, "scraper")
	waitAllowed(t, e, "system:serviceaccount:"+e.ns+":scraper", "/metrics")
	sa := "system:serviceaccount:" + m.sa.Namespace + ":" + m.sa.Name

	// apply installs the roles with the given rules and waits until the
	// apiserver's authorizer agrees with them.
	apply := func(cluster, lease []rbacv1.PolicyRule) {
		t.Helper()
		cr, r := m.clusterRole.DeepCopy(), m.role.DeepCopy()
		cr.Rules, r.Rules = cluster, lease
		for _, err := range []error{upsertClusterRole(e, cr), upsertRole(e, r)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			rules []rbacv1.PolicyRule
			ns    string
		}{{m.clusterRole.Rules, e.ns}, {m.role.Rules, m.role.Namespace}} {
			for _, rule := range c.rules {
				want := slices.ContainsFunc(cluster, func(x rbacv1.PolicyRule) bool { return ruleEqual(x, rule) }) ||
					slices.ContainsFunc(lease, func(x rbacv1.PolicyRule) bool { return ruleEqual(x, rule) })
				waitAccess(t, e, sa, c.ns, rule, want)
			}
		}
	}

	apply(m.clusterRole.Rules, m.role.Rules)
	if out, ok := rbacRun(t, e, bin, kubeconfig, m.args, scraper, "full", ""); !ok || strings.Contains(out, "forbidden") {
		t.Fatalf("with the whole ClusterRole: ok=%v, output:\n%s", ok, tail(out, 30))
	}
	type removal struct {
		name           string
		cluster, lease []rbacv1.PolicyRule
		resource       string
	}
	var removals []removal
	for i, rule := range m.clusterRole.Rules {
		removals = append(removals, removal{name: fmt.Sprintf("%v %v", rule.APIGroups, rule.Resources),
			cluster: slices.Delete(slices.Clone(m.clusterRole.Rules), i, i+1), lease: m.role.Rules, resource: rule.Resources[0]})
	}
	for i, rule := range m.role.Rules {
		removals = append(removals, removal{name: fmt.Sprintf("%v %v (Role)", rule.APIGroups, rule.Resources),
			cluster: m.clusterRole.Rules, lease: slices.Delete(slices.Clone(m.role.Rules), i, i+1), resource: rule.Resources[0]})
	}
	for i, r := range removals {
		t.Run("without "+r.name, func(t *testing.T) {
			apply(r.cluster, r.lease)
			out, ok := rbacRun(t, e, bin, kubeconfig, m.args, scraper, fmt.Sprint("web", i), r.resource)
			if ok {
				t.Errorf("without the rule for %s the run succeeded; the rule is not needed?\n%s", r.name, tail(out, 20))
			}
		})
	}
	apply(m.clusterRole.Rules, m.role.Rules)
}

// rbacRun starts bin with the manifest's args and kubeconfig and drives
// a rollout of a Deployment called name through the steps that need every
// rule, stopping at the first "forbidden" error in its output that names
// resource (any, when resource is ""). It reports the output and whether
// the whole run succeeded.
func rbacRun(t *testing.T, e *env, bin, kubeconfig string, args []string, scraper, name, resource string) (string, bool) {
	t.Helper()
	port := freeAddr(t)[len("127.0.0.1:"):]
	args = append(slices.Clone(args), "--kubeconfig="+kubeconfig, "--namespace="+e.ns, "--secure-port="+port,
		"--secure-bind-address=127.0.0.1", "--bind-address=", "--leader-elect-retry-period=200ms", "--v=2")
	logf := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(logf)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); f.Close() }()
	output := func() string { b, _ := os.ReadFile(logf); return string(b) }
	defer func() {
		// SIGTERM: the leader releases the Lease for the next run.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill() // our own child, by PID
			<-done
		}
	}()
	forbidden := func() bool {
		out := output()
		if resource == "" {
			return strings.Contains(out, "forbidden")
		}
		for _, l := range strings.Split(out, "\n") {
			// Structured logs escape the quotes of an error's message.
			if strings.Contains(l, "forbidden") && (strings.Contains(l, `resource "`+resource+`"`) || strings.Contains(l, `resource \"`+resource+`\"`)) {
				return true
			}
		}
		return false
	}
	// waitFor polls cond (and the log, for the forbidden error) until it
	// holds; false if the error appeared first or 30 s passed.
	waitFor := func(what string, cond func() bool) bool {
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if resource != "" && forbidden() {
				return false
			}
			select {
			case err := <-done:
				done <- err
				t.Logf("%s: ctrlkit-controller exited (%v) waiting for %s", name, err, what)
				return false
			default:
			}
			if time.Now().After(deadline) {
				t.Logf("%s: no %s within 30s", name, what)
				return false
			}
			time.Sleep(50 * time.Millisecond)
		}
		return true
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func() int {
		req, _ := http.NewRequestWithContext(e.ctx, http.MethodGet, "https://"+net.JoinHostPort("127.0.0.1", port)+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+scraper)
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	leading := func() bool {
		l, err := e.cs.CoordinationV1().Leases("kube-system").Get(e.ctx, "ctrlkit-controller", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && scrape() != 0
	}
	if !waitFor("leadership", leading) {
		return output(), false
	}
	if code := scrape(); code != http.StatusOK {
		t.Logf("%s: scrape: %d", name, code)
		return output(), false
	}
	d := deployment(name, 2, "nginx:1")
	d.Spec.RevisionHistoryLimit = new(int32(0))
	e.create(d)
	steps := []struct {
		what string
		act  func(*appsv1.Deployment)
	}{
		{"create", nil},
		{"new image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" }},
		{"scale to 3", func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(3)) }},
		{"scale to 2", func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(2)) }},
		{"scale to 3 again (a repeated event)", func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(3)) }},
	}
	for _, s := range steps {
		if s.act != nil {
			e.update(name, s.act)
		}
		if !waitFor(s.what, func() bool {
			d := e.get(name)
			return d.Generation >= e.gens[name] && d.Status.ObservedGeneration >= d.Generation && cluster.Complete(d)
		}) {
			return output(), false
		}
	}
	// A repeated event is patched; wait for its count.
	if !waitFor("a repeated event", func() bool { return e.eventCount(name) >= 2 }) {
		return output(), false
	}
	// A rollback to a revision that is gone (revisionHistoryLimit 0): the
	// controller clears the annotation with an update of the Deployment.
	e.update(name, func(d *appsv1.Deployment) { d.Annotations = map[string]string{appsv1.DeprecatedRollbackTo: "1"} })
	if !waitFor("the rollback annotation cleared", func() bool { _, set := e.get(name).Annotations[appsv1.DeprecatedRollbackTo]; return !set }) {
		return output(), false
	}
	ok := !forbidden()
	return output(), ok
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
