package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// The operator starts, rolls out its demo Deployment, and stops cleanly
// when its context ends.
func TestRun(t *testing.T) {
	c := memcluster.New(memcluster.Config{Clock: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), Seed: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	// Everything is built and started before the simulation runs: a
	// goroutine that built it would race with RunUntil.
	wait, err := start(ctx, c, &out)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wait() }()

	rolledOut := func() bool {
		d, err := c.Deployments("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false
		}
		st, err := rollout.Status(d, 0)
		return err == nil && st.Done
	}
	if err := c.RunUntil(ctx, rolledOut, time.Hour); err != nil {
		t.Fatalf("RunUntil = %v", err)
	}
	pods, _, err := c.Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hello"})
	if err != nil || len(pods) != 3 {
		t.Errorf("pods of hello: %d, %v; want 3", len(pods), err)
	}

	cancel() // what SIGINT does in main
	if err := <-done; err != nil {
		t.Errorf("run = %v; want a clean shutdown", err)
	}
	for _, want := range []string{
		"operator running; created deployment default/hello",
		"Normal default/hello ScalingReplicaSet: Scaled up replica set hello-",
		"operator stopped",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use: the operator
// writes events from its workers while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestNewNeedsSourcesAndClient(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New(Config{}) = nil error; want one")
	}
}
