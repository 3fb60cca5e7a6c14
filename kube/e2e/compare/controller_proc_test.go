//go:build e2e

package compare

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

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
)

// controllerProc is a ctrlkit-controller process: our controllers alone in
// a process, so that /proc measures them and nothing of the harness.
type controllerProc struct {
	cmd  *exec.Cmd
	addr string // of /healthz and /metrics
	log  string // its stderr
	done chan error
}

// buildController builds cmd/ctrlkit-controller into a temporary
// directory and returns the binary's path.
func buildController(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ctrlkit-controller")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ctrlkit-controller").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ctrlkit-controller: %v\n%s", err, out)
	}
	return bin
}

// startController starts bin for namespace ns with the given extra flags
// and waits until it serves /healthz. It is killed at the end of the test
// if stop was not called.
func startController(t *testing.T, bin, ns string, flags ...string) *controllerProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &controllerProc{addr: addr, log: filepath.Join(t.TempDir(), "ctrlkit-controller.log"), done: make(chan error, 1)}
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(bin, append([]string{"--kubeconfig=" + filepath.Join(cp.Dir, "kubeconfig"),
		"--namespace=" + ns, "--bind-address=" + addr}, flags...)...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill() // our own child, by PID
			<-c.done
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if path := os.Getenv("CTRLKIT_E2E_CPUPROFILE"); path != "" {
					c.profile(t, path)
				}
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ctrlkit-controller: no /healthz within 30 s:\n%s", c.tail(10))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// With CTRLKIT_E2E_CPUPROFILE=file, the controller's first
// CTRLKIT_E2E_CPUPROFILE_SECONDS (default 60) seconds are profiled into
// file, through its /debug/pprof.
func (c *controllerProc) profile(t *testing.T, path string) *controllerProc {
	secs := os.Getenv("CTRLKIT_E2E_CPUPROFILE_SECONDS")
	if secs == "" {
		secs = "60"
	}
	go func() {
		resp, err := http.Get("http://" + c.addr + "/debug/pprof/profile?seconds=" + secs)
		if err != nil {
			t.Logf("cpu profile: %v", err)
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(path, b, 0o644)
		}
		if err != nil {
			t.Logf("cpu profile: %v", err)
		}
	}()
	return c
}

func (c *controllerProc) pid() int { return c.cmd.Process.Pid }

// writes scrapes /metrics: ctrlkit_api_requests_total by verb and
// resource, and ctrlkit_api_conflicts_total under the pseudo verb
// "conflict(verb)", as TestSideBySide counts them.
func (c *controllerProc) writes(ctx context.Context) (map[kube.Request]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ctrlkit-controller /metrics: %s", resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[kube.Request]int{}
	for metric, conflict := range map[string]bool{"ctrlkit_api_requests_total": false, "ctrlkit_api_conflicts_total": true} {
		samples, err := cluster.Samples(bytes.NewReader(body), metric)
		if err != nil {
			return nil, err
		}
		for _, s := range samples {
			r := kube.Request{Verb: s.Labels["verb"], Resource: s.Labels["resource"]}
			if conflict {
				r.Verb = "conflict(" + r.Verb + ")"
			}
			out[r] += int(s.Value)
		}
	}
	return out, nil
}

// stop sends SIGTERM and waits for the process to drain and exit (killing
// it after a minute).
func (c *controllerProc) stop(t *testing.T) {
	t.Helper()
	if c.cmd.ProcessState != nil {
		return
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Error(err)
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("ctrlkit-controller exited with %v after SIGTERM:\n%s", err, c.tail(10))
		}
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Errorf("ctrlkit-controller still running a minute after SIGTERM; killed:\n%s", c.tail(10))
	}
}

func (c *controllerProc) tail(n int) string {
	b, _ := os.ReadFile(c.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
