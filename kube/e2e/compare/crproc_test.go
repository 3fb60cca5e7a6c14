//go:build e2e

package compare

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
)

// crOperatorDir is the controller-runtime operator of the examples, a
// module of its own (so the kube module does not depend on
// controller-runtime).
var crOperatorDir = filepath.Join("..", "..", "..", "examples", "controllerruntime")

// buildCROperator builds the controller-runtime operator and returns the
// binary's path, or "" when the module is not there or
// CTRLKIT_E2E_CONTROLLERRUNTIME=0.
func buildCROperator(t *testing.T) string {
	t.Helper()
	if os.Getenv("CTRLKIT_E2E_CONTROLLERRUNTIME") == "0" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(crOperatorDir, "go.mod")); err != nil {
		return ""
	}
	bin := filepath.Join(t.TempDir(), "ctrlkit-controllerruntime")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = crOperatorDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", crOperatorDir, err, out)
	}
	return bin
}

// runCROperator runs sc in namespace ns with the controller-runtime
// operator as a process of its own, its Manager's cache restricted to ns.
// Its writes are the API server's counts less the harness's.
func runCROperator(t *testing.T, ctx context.Context, bin, ns string, sc scenario, apiserverWrites func() map[kube.Request]int) result {
	t.Helper()
	s := newRun(t, ctx, ns)
	logPath := filepath.Join(t.TempDir(), "operator.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--kubeconfig="+filepath.Join(cp.Dir, "kubeconfig"), "--namespace="+ns, "--metrics-bind-address=0")
	cmd.Stdout = logf
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	// Its log goes to the file; both controllers log "Starting workers"
	// once their caches have synced, and that is the start.
	started, logged := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(logged)
		n := 0
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if c := strings.Count(sc.Text(), "Starting workers"); c > 0 && n < 2 {
				if n += c; n >= 2 {
					close(started)
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() { <-logged; done <- cmd.Wait(); logf.Close() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM) // our own child, by PID
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	defer stop()
	select {
	case <-started:
	case err := <-done:
		stopped = true // it has exited; nothing to stop
		b, _ := os.ReadFile(logPath)
		t.Fatalf("controller-runtime operator exited (%v) before it started:\n%s", err, b)
	case <-time.After(time.Minute):
		b, _ := os.ReadFile(logPath)
		t.Fatalf("controller-runtime operator did not start within a minute:\n%s", b)
	}
	res := s.execute(sc, apiserverWrites, true)
	stop()
	if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "panic") {
		t.Errorf("controller-runtime operator panicked:\n%s", b)
	}
	return res
}
