package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
)

// apiserverArgs returns the command line kube-apiserver was started with
// (read once from /proc, then remembered: restarts add their own flags to
// it).
func (cp *ControlPlane) apiserverArgs() ([]string, error) {
	if cp.apiArgs != nil {
		return cp.apiArgs, nil
	}
	pid, err := cp.pid("kube-apiserver")
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) < 2 {
		return nil, fmt.Errorf("cluster: kube-apiserver command line %q", b)
	}
	cp.apiArgs = args
	return args, nil
}

func (cp *ControlPlane) pid(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(cp.Dir, name+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// etcdURL returns etcd's client URL, from kube-apiserver's --etcd-servers.
func (cp *ControlPlane) etcdURL() (string, error) {
	args, err := cp.apiserverArgs()
	if err != nil {
		return "", err
	}
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
			return strings.Split(v, ",")[0], nil
		}
	}
	return "", errors.New("cluster: no --etcd-servers in kube-apiserver's command line")
}

// Restart is what RestartAPIServer measured.
type Restart struct {
	// Down is when kube-apiserver was sent SIGTERM, Exited when it was
	// gone, Ready when the new one answered /readyz.
	Down, Exited, Ready time.Time
	// Killed says that it was still draining after the grace period and
	// was killed.
	Killed bool
	// Before are the apiserver's request counters just before it was
	// stopped (see RequestTotals); they restart from zero.
	Before map[kube.Request]float64
}

// RestartAPIServer stops kube-apiserver (SIGTERM, by its pidfile; SIGKILL
// if it still drains after grace), runs between while it is down (if
// set), and starts it again on the same port, certificates and etcd, with
// its first command line plus flags; it returns once the new one is
// ready.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, grace time.Duration, between func(context.Context) error, flags ...string) (Restart, error) {
	var r Restart
	args, err := cp.apiserverArgs()
	if err != nil {
		return r, err
	}
	pid, err := cp.pid("kube-apiserver")
	if err != nil {
		return r, err
	}
	if r.Before, _, err = cp.RequestTotals(ctx); err != nil {
		return r, err
	}
	r.Down = time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return r, fmt.Errorf("cluster: stopping kube-apiserver: %w", err)
	}
	if err := cp.waitExit(ctx, pid, grace); err != nil {
		r.Killed = true
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return r, fmt.Errorf("cluster: killing kube-apiserver: %w", err)
		}
		if err := cp.waitExit(ctx, pid, time.Minute); err != nil {
			return r, err
		}
	}
	r.Exited = time.Now()
	if between != nil {
		if err := between(ctx); err != nil {
			return r, err
		}
	}
	log, err := os.OpenFile(filepath.Join(cp.Dir, "kube-apiserver.log"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return r, err
	}
	cmd := exec.Command(args[0], append(append([]string(nil), args[1:]...), flags...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // stopped by its pidfile, like the others
	if err := cmd.Start(); err != nil {
		log.Close()
		return r, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	cp.exited = exited
	if err := os.WriteFile(filepath.Join(cp.Dir, "kube-apiserver.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return r, err
	}
	if err := cp.waitReady(ctx, exited); err != nil {
		return r, err
	}
	r.Ready = time.Now()
	return r, nil
}

// waitExit waits for process pid to be gone (or a zombie).
func (cp *ControlPlane) waitExit(ctx context.Context, pid int, timeout time.Duration) error {
	if exited := cp.exited; exited != nil { // our own child: Wait reaps it
		select {
		case <-exited:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(timeout):
			return fmt.Errorf("cluster: kube-apiserver (pid %d) still running %v after SIGTERM", pid, timeout)
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: kube-apiserver (pid %d) still running %v after SIGTERM", pid, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitReady polls /readyz until it answers 200 (a failure bound of two
// minutes), or the process exits.
func (cp *ControlPlane) waitReady(ctx context.Context, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.Server+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+cp.Token)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("cluster: kube-apiserver exited:\n%s", logTail(filepath.Join(cp.Dir, "kube-apiserver.log"), 10))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: kube-apiserver not ready within 2 minutes:\n%s", logTail(filepath.Join(cp.Dir, "kube-apiserver.log"), 10))
		}
	}
}

// etcdCall posts a JSON request to etcd's gRPC gateway and decodes the
// answer into out.
func (cp *ControlPlane) etcdCall(ctx context.Context, path string, in, out any) error {
	base, err := cp.etcdURL()
	if err != nil {
		return err
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return fmt.Errorf("cluster: etcd %s: %s: %s", path, resp.Status, b.String())
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// CompactEtcd writes a key outside the API server's prefix twice (so
// that every resource version handed out so far is older than the
// revision) and compacts etcd's history up to the revision now: a watch
// from any earlier resource version is answered 410 Gone. It returns
// that revision.
func (cp *ControlPlane) CompactEtcd(ctx context.Context) (int64, error) {
	var put struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	key := base64.StdEncoding.EncodeToString([]byte("/ctrlkit-fault/bump"))
	val := base64.StdEncoding.EncodeToString([]byte("x"))
	for range 2 {
		if err := cp.etcdCall(ctx, "/v3/kv/put", map[string]string{"key": key, "value": val}, &put); err != nil {
			return 0, err
		}
	}
	rev, err := strconv.ParseInt(put.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cluster: etcd revision %q: %w", put.Header.Revision, err)
	}
	var out map[string]any
	if err := cp.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, &out); err != nil {
		return 0, err
	}
	return rev, nil
}
