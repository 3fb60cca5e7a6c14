//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// buildController builds cmd/ctrlkit-controller and returns its path.
func buildController(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ctrlkit-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/ctrlkit-controller").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestSecureServing runs ctrlkit-controller with --secure-port only and
// checks kube-controller-manager's delegated authentication and
// authorization on the real apiserver: /healthz is open, /metrics needs a
// token the apiserver authenticates and a role allowing get on /metrics
// (401 without a token, 403 for a ServiceAccount without the role, 200
// with it), and /debug/pprof is not open to a metrics reader. Plain HTTP
// on a non-loopback address is refused.
func TestSecureServing(t *testing.T) {
	bin := buildController(t)
	e := newEnv(t, envOptions{noOperator: true})
	ctx := e.ctx

	if out, err := exec.CommandContext(ctx, bin, "--kubeconfig="+filepath.Join(cp.Dir, "kubeconfig"), "--namespace="+e.ns,
		"--bind-address=0.0.0.0:0").CombinedOutput(); err == nil || !strings.Contains(string(out), "loopback only") {
		t.Errorf("--bind-address=0.0.0.0:0: err = %v, output:\n%s; want a refusal", err, out)
	}

	port := freeAddr(t)[len("127.0.0.1:"):]
	out := new(bytes.Buffer)
	cmd := exec.Command(bin, "--kubeconfig="+filepath.Join(cp.Dir, "kubeconfig"), "--namespace="+e.ns,
		"--bind-address=", "--secure-port="+port, "--secure-bind-address=127.0.0.1", "--v=2")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // our own child, by PID
		<-done
		if t.Failed() {
			t.Logf("ctrlkit-controller output:\n%s", out)
		}
	})

	// Two ServiceAccounts; only scraper may get /metrics.
	reader := "ctrlkit-metrics-reader-" + e.ns
	for _, sa := range []string{"scraper", "stranger"} {
		if _, err := e.cs.CoreV1().ServiceAccounts(e.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: reader},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: reader},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: "scraper"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), reader, metav1.DeleteOptions{})
		_ = e.cs.RbacV1().ClusterRoles().Delete(context.Background(), reader, metav1.DeleteOptions{})
	})
	// The apiserver's RBAC authorizer learns of the binding through its
	// informers: ask it until it allows, so that the controller's cache
	// never holds a denial from before.
	waitAllowed(t, e, "system:serviceaccount:"+e.ns+":scraper", "/metrics")
	token := func(sa string) string {
		tr, err := e.cs.CoreV1().ServiceAccounts(e.ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	scraper, stranger := token("scraper"), token("stranger")

	// Loopback only, to the controller we started, whose certificate is
	// self-signed.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(path, token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort("127.0.0.1", port)+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for code, _ := get("/healthz", ""); code != http.StatusOK; code, _ = get("/healthz", "") {
		select {
		case err := <-done:
			t.Fatalf("ctrlkit-controller exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /healthz over TLS within 30s (last %d)", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct {
		path, who, token string
		want             int
	}{
		{"/healthz", "anonymous", "", http.StatusOK},
		{"/metrics", "anonymous", "", http.StatusUnauthorized},
		{"/metrics", "an invalid token", "not-a-token", http.StatusUnauthorized},
		{"/metrics", "stranger", stranger, http.StatusForbidden},
		{"/metrics", "scraper", scraper, http.StatusOK},
		{"/debug/pprof/", "scraper", scraper, http.StatusForbidden},
	} {
		code, body := get(c.path, c.token)
		if code != c.want {
			t.Errorf("GET %s as %s: %d; want %d\n%.300s", c.path, c.who, code, c.want, body)
		}
		if c.want == http.StatusOK && c.path == "/metrics" && !strings.Contains(body, "\nworkqueue_adds_total{") {
			t.Errorf("GET /metrics as %s: no workqueue_adds_total:\n%.500s", c.who, body)
		}
	}
}

// waitAllowed waits until the apiserver allows user to get path.
func waitAllowed(t *testing.T, e *env, user, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sar, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(e.ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(fmt.Sprintf("%s not allowed get %s within 30s: %s", user, path, sar.Status.Reason))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
