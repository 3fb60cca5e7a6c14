//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/kube/plugin"
)

// pluginBinary builds kubectl-ctrlkit once for the package.
var pluginBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "kubectl-ctrlkit")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kubectl-ctrlkit")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/kubectl-ctrlkit").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build kubectl-ctrlkit: %v\n%s", err, out)
	}
	return bin, nil
})

// kubectlCtrlkit runs the plugin binary against the package's control
// plane and returns its exit code, stdout and stderr.
func kubectlCtrlkit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return kubectlCtrlkitOn(t, cp, args...)
}

// kubectlCtrlkit runs the plugin binary against e's control plane.
func (e *env) kubectlCtrlkit(args ...string) (int, string, string) {
	e.t.Helper()
	return kubectlCtrlkitOn(e.t, e.cp, args...)
}

func kubectlCtrlkitOn(t *testing.T, plane *cluster.ControlPlane, args ...string) (int, string, string) {
	t.Helper()
	bin, err := pluginBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(args, "--kubeconfig", filepath.Join(plane.Dir, "kubeconfig"))...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// why runs `kubectl ctrlkit why deploy/name -o json` in e's namespace.
func (e *env) why(name string, extra ...string) (int, plugin.WhyReport) {
	e.t.Helper()
	code, out, errOut := e.kubectlCtrlkit(append([]string{"why", "deploy/" + name, "-n", e.ns, "-o", "json"}, extra...)...)
	var r plugin.WhyReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		e.t.Fatalf("why: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
	}
	return code, r
}

// TestPluginErrors: the binary's errors against a real apiserver.
func TestPluginErrors(t *testing.T) {
	e := newEnv(t, envOptions{noOperator: true})
	code, out, errOut := kubectlCtrlkit(t, "why", "deploy/nope", "-n", e.ns)
	if want := fmt.Sprintf("error: deployments.apps \"nope\" not found in namespace %q\n", e.ns); code != plugin.ExitError || errOut != want || out != "" {
		t.Errorf("missing deployment: exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}
	code, _, errOut = kubectlCtrlkit(t, "why", "deploy/web", "-n", e.ns, "--token", "not-a-token")
	if code != plugin.ExitError || !bytes.Contains([]byte(errOut), []byte("not authenticated to the API server")) {
		t.Errorf("bad token: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = kubectlCtrlkit(t, "why", "deploy/web", "-n", e.ns, "--server", "https://127.0.0.1:1")
	if code != plugin.ExitError || !bytes.Contains([]byte(errOut), []byte("cannot reach the API server https://127.0.0.1:1")) {
		t.Errorf("unreachable server: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = kubectlCtrlkit(t, "why", "deploy/web", "-n", e.ns, "--as", "nobody")
	if code != plugin.ExitError || !bytes.Contains([]byte(errOut), []byte("no permission to get deployments.apps \"web\"")) {
		t.Errorf("no permission: exit %d, stderr %q", code, errOut)
	}
}

// waitWhy runs why until its report has every code of want and the state,
// or the deadline passes; it returns the last report.
func (e *env) waitWhy(name string, want []plugin.CauseCode, state plugin.RolloutState, timeout time.Duration, extra ...string) (int, plugin.WhyReport) {
	e.t.Helper()
	return e.waitWhyEach(name, want, state, timeout, nil, extra...)
}

// waitWhyEach is waitWhy that also shows each report to each (if set).
func (e *env) waitWhyEach(name string, want []plugin.CauseCode, state plugin.RolloutState, timeout time.Duration,
	each func(plugin.WhyReport), extra ...string) (int, plugin.WhyReport) {
	e.t.Helper()
	return e.waitWhyUntil(name, func(r plugin.WhyReport) bool { return r.State == state && hasAll(r.Causes, want) }, timeout, each, extra...)
}

// waitWhyUntil runs why until done accepts its report, or the deadline
// passes; it shows each report to each (if set) and returns the last.
func (e *env) waitWhyUntil(name string, done func(plugin.WhyReport) bool, timeout time.Duration,
	each func(plugin.WhyReport), extra ...string) (int, plugin.WhyReport) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, r := e.why(name, extra...)
		e.t.Logf("why: exit %d, %s %v", code, r.State, codesOf(r.Causes))
		if each != nil {
			each(r)
		}
		if done(r) || time.Now().After(deadline) {
			return code, r
		}
		select {
		case <-e.ctx.Done():
			return code, r
		case <-time.After(300 * time.Millisecond): // a poll of the live state, not a wait for time to pass
		}
	}
}

// hasOnly reports whether every cause of cs is one of want.
func hasOnly(cs []plugin.Cause, want []plugin.CauseCode) bool {
	for _, c := range cs {
		if !slices.Contains(want, c.Code) {
			return false
		}
	}
	return true
}

func hasAll(cs []plugin.Cause, want []plugin.CauseCode) bool {
	got := map[plugin.CauseCode]bool{}
	for _, c := range cs {
		got[c.Code] = true
	}
	for _, w := range want {
		if !got[w] {
			return false
		}
	}
	return true
}
