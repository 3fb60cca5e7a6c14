//go:build e2e

// Package shard runs ctrlkit-controller sharded (--shard) against a real
// etcd and kube-apiserver v1.37.1 started with
// --feature-gates=ShardedListAndWatch=true (a control plane of its own),
// and compares memcluster's answers to shardSelector with
// kube-apiserver's.
package shard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
)

// cp is the package's control plane; ctrlkitBin the ctrlkit-controller
// binary built for the suite.
var (
	cp         *cluster.ControlPlane
	ctrlkitBin string
)

// gate is the kube-apiserver feature gate of sharded lists and watches
// (k8s.io/apiserver/pkg/features.ShardedListAndWatch, alpha since 1.36).
const gate = "--feature-gates=ShardedListAndWatch=true"

func TestMain(m *testing.M) {
	os.Exit(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		dir, err := os.MkdirTemp("", "ctrlkit-shard-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		ctrlkitBin = filepath.Join(dir, "ctrlkit-controller")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", ctrlkitBin, "../../cmd/ctrlkit-controller").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build ctrlkit-controller: %v\n%s", err, out)
			return 1
		}
		// controlplane.sh passes CTRLKIT_APISERVER_FLAGS to kube-apiserver.
		flags := strings.TrimSpace(os.Getenv("CTRLKIT_APISERVER_FLAGS") + " " + gate)
		if err := os.Setenv("CTRLKIT_APISERVER_FLAGS", flags); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		start := time.Now()
		if cp, err = cluster.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			if err := cp.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
		fmt.Fprintf(os.Stderr, "control plane (%s) up in %v at %s\n", gate, time.Since(start).Round(time.Millisecond), cp.Server)
		return m.Run()
	}())
}
