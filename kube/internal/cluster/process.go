package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a controller process the harness started (ctrlkit-controller
// or kube-controller-manager), to be killed or stopped mid-rollout.
type Process struct {
	Name string
	Log  string // its stdout and stderr
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess starts path with args, its output in dir/name.log. The
// process is in a session of its own and is only ever signalled by PID.
func StartProcess(dir, name, path string, args ...string) (*Process, error) {
	p := &Process{Name: name, Log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	log, err := os.Create(p.Log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() { p.err = p.cmd.Wait(); log.Close(); close(p.done) }()
	return p, nil
}

// StartKCMProcess starts a kube-controller-manager of its own (beside the
// one StartKCM manages) with the given kubeconfig, controllers and extra
// flags (e.g. --leader-elect=true and the lease durations), in dir.
func (cp *ControlPlane) StartKCMProcess(ctx context.Context, dir, name, kubeconfig, controllers string, flags ...string) (*Process, error) {
	bin, err := runScript(ctx, cp.script, "bin")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	certs := filepath.Join(dir, name+"-certs")
	if err := os.MkdirAll(certs, 0o755); err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig, "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certs, "--use-service-account-credentials=false",
		"--service-account-private-key-file=" + filepath.Join(cp.Dir, "sa.key"), "--controllers=" + controllers,
	}, flags...)
	return StartProcess(dir, name, filepath.Join(bin, "kube-controller-manager"), args...)
}

// Pid returns the process's PID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Term sends SIGTERM and waits up to timeout for the process to exit
// (then kills it), returning its exit error, if any.
func (p *Process) Term(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("%s still running %v after SIGTERM; killed:\n%s", p.Name, timeout, p.Tail(10))
	}
}

// Logged reports whether the process's log has a line containing s.
func (p *Process) Logged(s string) bool {
	b, _ := os.ReadFile(p.Log)
	return strings.Contains(string(b), s)
}

// Tail returns the last n lines of the log.
func (p *Process) Tail(n int) string { return logTail(p.Log, n) }
