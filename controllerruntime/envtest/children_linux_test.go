package envtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestEndChildrenEndsWhatTheBinaryStarted starts a process that would run
// for a minute and ends it, as the watchdog ends a real control plane's
// before it ends the test binary.
func TestEndChildrenEndsWhatTheBinaryStarted(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a child process: %v", err)
	}
	ended := endChildren()
	if !slices.Contains(ended, cmd.Process.Pid) {
		cmd.Process.Kill()
		t.Fatalf("endChildren ended %v; want the child %d among them", ended, cmd.Process.Pid)
	}
	err := cmd.Wait()
	status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ok || !status.Signaled() || status.Signal() != syscall.SIGTERM {
		t.Errorf("the child ended with %v; want it ended by SIGTERM", err)
	}
}

func TestParentOfReadsAnOddCommand(t *testing.T) {
	stat := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(stat, []byte("4242 (kube (api) server) S 17 4242 1 0 -1 4194560\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pid, ppid, ok := parentOf(stat)
	if !ok || pid != 4242 || ppid != 17 {
		t.Errorf("parentOf = %d, %d, %v; want 4242, 17, true", pid, ppid, ok)
	}
	if _, _, ok := parentOf(filepath.Join(t.TempDir(), "missing")); ok {
		t.Error("parentOf a missing file says ok")
	}
}
