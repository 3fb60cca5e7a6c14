package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startKCM starts kube-controller-manager as controlplane.sh's start-kcm
// does (same flags, log, pidfile and port file in cp.Dir, so that StopKCM
// and Stop find it), with flags appended: the script takes no extra flags.
func (cp *ControlPlane) startKCM(ctx context.Context, controllers string, flags []string) error {
	bin, err := runScript(ctx, cp.script, "bin")
	if err != nil {
		return err
	}
	certs := filepath.Join(cp.Dir, "kcm-certs")
	if err := os.MkdirAll(certs, 0o755); err != nil {
		return err
	}
	var errs []error
	for range 3 { // a port can be taken between the check and the bind
		port, err := freePort()
		if err != nil {
			return err
		}
		args := append([]string{
			"--kubeconfig=" + filepath.Join(cp.Dir, "kubeconfig"), "--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port), "--cert-dir=" + certs,
			"--leader-elect=false", "--use-service-account-credentials=false",
			"--service-account-private-key-file=" + filepath.Join(cp.Dir, "sa.key"), "--controllers=" + controllers,
		}, flags...)
		err = cp.spawnKCM(ctx, filepath.Join(bin, "kube-controller-manager"), args, port)
		if err == nil {
			return os.WriteFile(filepath.Join(cp.Dir, "kcm-port"), []byte(strconv.Itoa(port)+"\n"), 0o644)
		}
		errs = append(errs, err)
		if stopErr := cp.StopKCM(ctx); stopErr != nil {
			return errors.Join(append(errs, stopErr)...)
		}
	}
	return fmt.Errorf("cluster: kube-controller-manager not healthy: %w", errors.Join(errs...))
}

// spawnKCM starts the process in a session of its own (it survives us, as
// the script's processes do, and is stopped by its pidfile) and waits up
// to a minute for /healthz.
func (cp *ControlPlane) spawnKCM(ctx context.Context, path string, args []string, port int) error {
	log, err := os.Create(filepath.Join(cp.Dir, "kube-controller-manager.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }() // reaps it whoever stops it
	if err := os.WriteFile(filepath.Join(cp.Dir, "kube-controller-manager.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill() // our own child
		<-exited
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("kube-controller-manager exited:\n%s", logTail(filepath.Join(cp.Dir, "kube-controller-manager.log"), 5))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-controller-manager: no /healthz within a minute:\n%s", logTail(filepath.Join(cp.Dir, "kube-controller-manager.log"), 5))
		}
	}
}

// KCMPid returns the PID of the kube-controller-manager started by
// StartKCM.
func (cp *ControlPlane) KCMPid() (int, error) {
	b, err := os.ReadFile(filepath.Join(cp.Dir, "kube-controller-manager.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// freePort returns a TCP port that 127.0.0.1 can listen on now, below
// Linux's ephemeral range (32768+) like controlplane.sh's free_port.
func freePort() (int, error) {
	for range 200 {
		p := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			ln.Close()
			return p, nil
		}
	}
	return 0, errors.New("cluster: no free port found")
}

func logTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
