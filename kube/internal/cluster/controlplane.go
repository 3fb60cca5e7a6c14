// Package cluster is the end-to-end test harness of package kube: it starts
// a real etcd + kube-apiserver (and, when asked, the upstream
// kube-controller-manager) through hack/controlplane.sh, creates every
// namespace's default ServiceAccount (kube-apiserver runs its default
// admission plugins, ServiceAccount included), and records what the
// controllers write as a trace. The kubelet that plays for the pods is
// package simkubelet.
package cluster

import (
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
	"strings"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
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
	// stopAccounts stops the creator of default ServiceAccounts.
	stopAccounts func()
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

// Start builds the binaries if they are not cached (the first time: about
// 1000 s of CPU, 15–41 minutes of wall time depending on the machine's
// load) and starts a control plane.
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
	cs, err := kubernetes.NewForConfig(cp.Config(20, 40))
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	actx, cancel := context.WithCancel(context.Background())
	wait := serviceAccounts(actx, cs)
	cp.stopAccounts = func() { cancel(); wait() }
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
// controllers (a --controllers value, e.g.
// "garbage-collector-controller,resourcequota-controller": ResourceQuotas
// need the quota controller, which computes their usage and gives room
// back as pods go) and, if any, extra command-line flags (e.g.
// --kube-api-qps=100).
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
	if cp.stopAccounts != nil {
		cp.stopAccounts()
	}
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

// Samples returns the samples of metric (a counter, gauge or untyped
// family) in r, a Prometheus text exposition, parsed by
// prometheus/common's expfmt. A sample without labels has nil Labels.
func Samples(r io.Reader, metric string) ([]Sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var out []Sample
	for _, m := range mfs[metric].GetMetric() {
		var labels map[string]string
		for _, l := range m.GetLabel() {
			if labels == nil {
				labels = make(map[string]string)
			}
			labels[l.GetName()] = l.GetValue()
		}
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		out = append(out, Sample{Labels: labels, Value: v})
	}
	return out, nil
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
