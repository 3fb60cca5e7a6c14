//go:build e2e

package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/shard"
)

// replica is one ctrlkit-controller process with --shard, reaching the
// API server through a recording proxy of its own.
type replica struct {
	name  string
	cmd   *exec.Cmd
	addr  string
	out   *syncBuffer
	done  chan error
	proxy *cluster.Proxy
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startReplica(t *testing.T, name, group, mode string, seed uint64) *replica {
	t.Helper()
	p, err := cluster.StartProxy(cp, seed, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	r := &replica{name: name, addr: freeAddr(t), out: &syncBuffer{}, done: make(chan error, 1), proxy: p}
	r.cmd = exec.Command(ctrlkitBin, "--kubeconfig="+p.Kubeconfig(), "--shard", "--shard-identity="+name, "--shard-group="+group,
		"--shard-selector="+mode, "--shard-ranges=8", "--bind-address="+r.addr, "--v=2")
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill() // our own child, by PID
			<-r.done
		}
	})
	return r
}

// metric sums the samples of name in the replica's /metrics.
func (r *replica) metric(name string) float64 {
	resp, err := http.Get("http://" + r.addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	total := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			total += v
		}
	}
	return total
}

// timeline follows the group's assignment Lease.
type timeline struct {
	mu       sync.Mutex
	versions []version
}

type version struct {
	at time.Time
	a  shard.Assignment
}

func follow(ctx context.Context, t *testing.T, cs kubernetes.Interface, group string) *timeline {
	tl := &timeline{}
	w, err := cs.CoordinationV1().Leases("kube-system").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + group})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			l, ok := ev.Object.(interface{ GetAnnotations() map[string]string })
			if !ok {
				continue
			}
			var a shard.Assignment
			if json.Unmarshal([]byte(l.GetAnnotations()[shard.AnnotationAssignment]), &a) != nil {
				continue
			}
			tl.mu.Lock()
			tl.versions = append(tl.versions, version{time.Now(), a})
			tl.mu.Unlock()
		}
	}()
	return tl
}

func (tl *timeline) last() (shard.Assignment, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.versions) == 0 {
		return shard.Assignment{}, false
	}
	return tl.versions[len(tl.versions)-1].a, true
}

// ownerAt returns the owners of range i between from and to (as the
// test saw the record: a change shows a little after it happened).
func (tl *timeline) ownersBetween(i int, from, to time.Time) []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []string
	for k, v := range tl.versions {
		next := time.Now().Add(time.Hour)
		if k+1 < len(tl.versions) {
			next = tl.versions[k+1].at
		}
		if v.at.Before(to) && next.After(from) && !slices.Contains(out, v.a.Owners[i].Member) {
			out = append(out, v.a.Owners[i].Member)
		}
	}
	return out
}

func rangeOf(a shard.Assignment, ns string) int {
	h, i := shard.Hash(ns), 0
	for k, s := range a.Starts {
		if v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64); err == nil && v <= h {
			i = k
		}
	}
	return i
}

// assigned reports whether every range belongs to one of live.
func assigned(a shard.Assignment, live ...string) bool {
	per := map[string]int{}
	for _, o := range a.Owners {
		if !slices.Contains(live, o.Member) {
			return false
		}
		per[o.Member]++
	}
	return len(per) == len(live)
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not after %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}
