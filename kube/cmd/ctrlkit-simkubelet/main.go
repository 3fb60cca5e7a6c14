// Command ctrlkit-simkubelet plays scheduler and kubelet for the pods of
// a cluster that has no nodes (package simkubelet's FaultKubelet), so that
// rollouts run, and stuck ones can be reproduced, against a real API
// server:
//
//	ctrlkit-simkubelet [--kubeconfig=FILE] [-n NAMESPACE] [--ready-after=2s] [--fault IMAGE=FAULT ...]
//
// Each new pod is bound to a node (node-1…node-3, or its spec.nodeName),
// started, and Ready --ready-after later; pods whose first container runs
// an image given with --fault get that fault's status and events instead,
// as a real kubelet writes them (ImagePull, InvalidImage, PrivateImage,
// CrashLoop, OOMKilled, InitCrashLoop, ConfigError, Unschedulable,
// ReadinessFails, OutOfcpu, OutOfmemory, NodeAffinity,
// UnexpectedAdmissionError). Deletions are confirmed at once. Without
// -n it serves every namespace. It logs one line per pod and stops on
// SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ctrlkit-simkubelet:", err)
		os.Exit(2)
	}
}

// faults is the repeatable --fault IMAGE=FAULT flag.
type faults map[string]simkubelet.Fault

func (f faults) String() string { return fmt.Sprint(map[string]simkubelet.Fault(f)) }

func (f faults) Set(s string) error {
	img, name, ok := strings.Cut(s, "=")
	if !ok || img == "" {
		return fmt.Errorf("%q: want IMAGE=FAULT", s)
	}
	fault, err := simkubelet.ParseFault(name)
	if err != nil {
		return err
	}
	f[img] = fault
	return nil
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("ctrlkit-simkubelet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	var ns string
	fs.StringVar(&ns, "namespace", "", "serve the pods of this namespace only (default: every namespace)")
	fs.StringVar(&ns, "n", "", "shorthand for --namespace")
	ready := fs.Duration("ready-after", 2*time.Second, "time from binding to Ready (or to the fault)")
	fm := faults{}
	fs.Var(fm, "fault", "IMAGE=FAULT: pods whose first container runs IMAGE get FAULT (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	logger := log.New(stderr, "", log.LstdFlags)
	k := &simkubelet.FaultKubelet{Client: cs, Namespace: ns, ReadyDelay: *ready, Logf: logger.Printf,
		Fault: func(p *corev1.Pod) simkubelet.Fault { return fm[p.Spec.Containers[0].Image] }}
	logger.Printf("serving the pods of %s on %s (Ready after %s, faults %v)", nsName(ns), cfg.Host, *ready, fm)
	return k.Run(ctx)
}

func nsName(ns string) string {
	if ns == "" {
		return "every namespace"
	}
	return "namespace " + ns
}
