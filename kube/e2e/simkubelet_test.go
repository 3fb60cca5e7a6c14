//go:build e2e

package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSimKubeletCommand runs the ctrlkit-simkubelet command as a user
// does, beside ctrlkit's controllers: a healthy Deployment rolls out, and
// an image given with --fault gets the kubelet's rejection.
func TestSimKubeletCommand(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ctrlkit-simkubelet")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/ctrlkit-simkubelet").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	e := newEnv(t, envOptions{noKubelet: true})
	var out syncBuffer
	cmd := exec.Command(bin, "--kubeconfig="+filepath.Join(cp.Dir, "kubeconfig"), "-n", e.ns, "--ready-after=200ms", "--fault", "app:2=OutOfcpu")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill() // our own child, by PID
			<-done
		}
	})
	e.create(deployment("web", 2, "app:1"))
	e.waitComplete("web", 30*time.Second)
	e.update("web", setImage("app:2"))
	rejected := func() bool {
		for _, p := range e.pods() {
			if p.Status.Phase == corev1.PodFailed && p.Status.Reason == "OutOfcpu" && strings.HasPrefix(p.Status.Message, "Pod was rejected: ") {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(30 * time.Second); !rejected(); {
		if time.Now().After(deadline) {
			t.Fatalf("no pod rejected by the kubelet within 30s\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond) // a poll of the API server's state
	}
	evs, err := e.cs.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "reason=OutOfcpu"})
	if err != nil || len(evs.Items) == 0 || evs.Items[0].Source.Component != "kubelet" {
		t.Errorf("the kubelet's OutOfcpu event: %v, %+v", err, evs)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit within 30s of SIGTERM\n%s", out.String())
	}
	for _, want := range []string{"serving the pods of namespace " + e.ns, ": on node-", ", Ready", ": rejected on node-"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, out.String())
		}
	}
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
