//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
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
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
)

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
