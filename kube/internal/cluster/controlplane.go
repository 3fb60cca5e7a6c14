// Package cluster is the end-to-end test harness of package kube: it starts
// a real etcd + kube-apiserver (and, when asked, the upstream
// kube-controller-manager) through hack/controlplane.sh, plays kubelet for
// the pods, and records what the controllers write as a trace.
package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
	"k8s.io/client-go/rest"
)

// ControlPlane is a running etcd + kube-apiserver on loopback.
type ControlPlane struct {
	// Dir holds the kubeconfig, the admin token, logs and pidfiles.
	Dir string
	// Server is the apiserver's URL; Token its admin bearer token.
	Server, Token string
	script        string
	// apiArgs is kube-apiserver's first command line; exited is closed
	// when a kube-apiserver RestartAPIServer started has exited.
	apiArgs []string
	exited  chan struct{}
}

// Script returns the path of hack/controlplane.sh, found from this source
// file, or $CTRLKIT_CONTROLPLANE if set.
func Script() string {
	if s := os.Getenv("CTRLKIT_CONTROLPLANE"); s != "" {
		return s
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "hack", "controlplane.sh")
}

func runScript(ctx context.Context, script string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cluster: controlplane.sh %s: %w\n%s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String()), nil
}

// Start builds the binaries if they are not cached (this can take
// ~15 minutes the first time) and starts a control plane.
func Start(ctx context.Context) (*ControlPlane, error) {
	script := Script()
	if _, err := runScript(ctx, script, "build"); err != nil {
		return nil, err
	}
	dir, err := runScript(ctx, script, "start")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir, script: script}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"server", &cp.Server}, {"token", &cp.Token}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return nil, errors.Join(err, cp.Stop())
		}
		*f.dst = strings.TrimSpace(string(b))
	}
	return cp, nil
}

// Config returns an admin client configuration with the given client-side
// rate limits (kube-controller-manager uses 20 and 30).
func (cp *ControlPlane) Config(qps float32, burst int) *rest.Config {
	return &rest.Config{
		Host: cp.Server, BearerToken: cp.Token, QPS: qps, Burst: burst,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(cp.Dir, "certs", "apiserver.crt")},
	}
}

// StartKCM starts the upstream kube-controller-manager with the given
// controllers (a --controllers value) and, if any, extra command-line
// flags (e.g. --kube-api-qps=100).
func (cp *ControlPlane) StartKCM(ctx context.Context, controllers string, flags ...string) error {
	if len(flags) > 0 {
		return cp.startKCM(ctx, controllers, flags)
	}
	_, err := runScript(ctx, cp.script, "start-kcm", cp.Dir, controllers)
	return err
}

// StopKCM stops the kube-controller-manager started by StartKCM.
func (cp *ControlPlane) StopKCM(ctx context.Context) error {
	_, err := runScript(ctx, cp.script, "stop-kcm", cp.Dir)
	return err
}

// Stop stops every process of the control plane and removes its directory.
func (cp *ControlPlane) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := runScript(ctx, cp.script, "stop", cp.Dir)
	return err
}

// RequestTotals scrapes the apiserver's apiserver_request_total counters
// and sums them by verb and resource, with the verbs named as
// [kube.Classify] names them: all requests, and those answered 409.
func (cp *ControlPlane) RequestTotals(ctx context.Context) (all, conflicts map[kube.Request]float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.Server+"/metrics", nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+cp.Token)
	// Loopback only, to our own throwaway apiserver.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("cluster: /metrics: %s", resp.Status)
	}
	samples, err := Samples(resp.Body, "apiserver_request_total")
	if err != nil {
		return nil, nil, err
	}
	all, conflicts = make(map[kube.Request]float64), make(map[kube.Request]float64)
	for _, s := range samples {
		res := s.Labels["resource"]
		if sub := s.Labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		r := kube.Request{Verb: apiserverVerb(s.Labels["verb"]), Resource: res}
		all[r] += s.Value
		if s.Labels["code"] == "409" {
			conflicts[r] += s.Value
		}
	}
	return all, conflicts, nil
}

// Sample is one sample of a metric in the Prometheus text format.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Samples returns the samples of metric (with labels, or none) in r, a
// Prometheus text exposition.
func Samples(r io.Reader, metric string) ([]Sample, error) {
	var out []Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, metric)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		var labels map[string]string
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("cluster: %q: no closing brace", line)
			}
			labels, rest = parseLabels(rest[1:end]), rest[end+1:]
		}
		f := strings.Fields(rest) // value [timestamp]
		if len(f) == 0 {
			return nil, fmt.Errorf("cluster: %q: no value", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("cluster: %q: %w", line, err)
		}
		out = append(out, Sample{Labels: labels, Value: v})
	}
	return out, sc.Err()
}

func apiserverVerb(v string) string {
	switch v {
	case "POST":
		return "create"
	case "PUT":
		return "update"
	case "PATCH", "APPLY":
		return "patch"
	}
	return strings.ToLower(v)
}

func parseLabels(s string) map[string]string {
	m := make(map[string]string)
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			break
		}
		name := s[:eq]
		rest := s[eq+1:]
		// Values are quoted; find the closing quote, honouring escapes.
		i := 1
		for i < len(rest) && rest[i] != '"' {
			if rest[i] == '\\' {
				i++
			}
			i++
		}
		val, err := strconv.Unquote(rest[:min(i+1, len(rest))])
		if err != nil {
			val = strings.Trim(rest[:min(i+1, len(rest))], `"`)
		}
		m[name] = val
		s = strings.TrimPrefix(rest[min(i+1, len(rest)):], ",")
	}
	return m
}
