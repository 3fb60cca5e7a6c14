//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// instance is one running ctrlkit-controller process.
type instance struct {
	cmd  *exec.Cmd
	addr string
	out  *bytes.Buffer
	done chan error
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startBinary(t *testing.T, bin, ns string) *instance {
	addr := freeAddr(t)
	in := &instance{addr: addr, out: new(bytes.Buffer), done: make(chan error, 1)}
	in.cmd = exec.Command(bin, "--kubeconfig="+filepath.Join(cp.Dir, "kubeconfig"), "--namespace="+ns,
		"--leader-elect", "--leader-elect-resource-namespace="+ns, "--leader-elect-retry-period=500ms",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--bind-address="+addr, "--v=2")
	in.cmd.Stdout, in.cmd.Stderr = in.out, in.out
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { in.done <- in.cmd.Wait() }()
	t.Cleanup(func() {
		if in.cmd.ProcessState == nil {
			_ = in.cmd.Process.Kill() // our own child, by PID
			<-in.done
		}
	})
	return in
}

func (in *instance) get(path string) (int, string) {
	resp, err := http.Get("http://" + in.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (in *instance) leading() bool {
	_, body := in.get("/metrics")
	return strings.Contains(body, "\n"+`leader_election_master_status{name="ctrlkit-controller"} 1`+"\n")
}

// TestOperatorBinary runs two ctrlkit-controller processes with leader
// election: one leads and rolls a Deployment out; on SIGTERM it drains,
// releases the Lease, and the other takes over.
func TestOperatorBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ctrlkit-controller")
	build := exec.Command("go", "build", "-o", bin, "../cmd/ctrlkit-controller")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond, noOperator: true})
	a, b := startBinary(t, bin, e.ns), startBinary(t, bin, e.ns)
	leader, follower := a, b
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _ := a.get("/healthz"); code == http.StatusOK && a.leading() {
			break
		}
		if code, _ := b.get("/healthz"); code == http.StatusOK && b.leading() {
			leader, follower = b, a
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader after 30s\nA:\n%s\nB:\n%s", a.out, b.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if follower.leading() {
		t.Fatal("both instances lead")
	}
	e.create(deployment("web", 3, "nginx:1"))
	e.waitComplete("web", 30*time.Second)
	_, metrics := leader.get("/metrics")
	for _, want := range []string{`ctrlkit_api_requests_total{resource="pods",verb="create"} 3`, `ctrlkit_syncs_total{controller="deployment",result="success"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("leader /metrics lacks %q:\n%s", want, metrics)
		}
	}

	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-leader.done:
		if err != nil {
			t.Fatalf("leader exited with %v after SIGTERM:\n%s", err, leader.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("leader did not exit within 30s of SIGTERM")
	}
	lease, err := e.cs.CoordinationV1().Leases(e.ns).Get(context.Background(), "ctrlkit-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lease holder after the leader's exit: %q", deref(lease.Spec.HolderIdentity))
	deadline = time.Now().Add(15 * time.Second)
	for !follower.leading() {
		if time.Now().After(deadline) {
			t.Fatalf("follower did not take over within 15s:\n%s", follower.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	n := int32(5)
	e.update("web", func(d *appsv1.Deployment) { d.Spec.Replicas = &n })
	e.waitComplete("web", 30*time.Second)
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "leader log tail:\n%s\n", tail(leader.out.String(), 5))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
