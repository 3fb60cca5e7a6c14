package kube_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// logLines collects structured log lines as funcr renders them in JSON.
type logLines struct {
	mu    sync.Mutex
	lines []map[string]any
	bad   []string
}

func (l *logLines) write(obj string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		l.bad = append(l.bad, obj)
		return
	}
	l.lines = append(l.lines, m)
}

// find returns the lines whose msg is msg.
func (l *logLines) find(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, m := range l.lines {
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestOperatorLogs runs the operator through one rollout (create, then a
// new image) on memcluster with a JSON logger at verbosity 4, and checks
// the lines kube-controller-manager's log queries look for: upstream's
// "Started syncing"/"Finished syncing" pairs at V(4) with the duration,
// and the keys deployment, replicaSet, pod and kind, from the logger in
// the context (Operator.Logger).
func TestOperatorLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, cfg, _ := newMemcluster(t, memcluster.Config{Seed: 1})
		ctx, stop := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer stop()
		k := memcluster.NewKubelet(c, memcluster.KubeletConfig{})
		wg.Go(func() { k.Run(ctx) })
		logs := new(logLines)
		log := funcr.NewJSON(logs.write, funcr.Options{Verbosity: 4})
		op := &kube.Operator{Config: cfg, Namespace: "ns", Logger: log}
		wg.Go(func() {
			if err := op.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
		d := webDeployment()
		d.Spec.Replicas = new(int32(2))
		if _, err := c.Deployments("ns").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitComplete(t, c, "nginx:1.27")
		if _, err := c.Deployments("ns").Patch(ctx, "web", types.MergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitComplete(t, c, "nginx:1.28")
		stop()
		wg.Wait()

		t.Logf("%d log lines, %d Started syncing deployment, %d Deleted pod", len(logs.lines), len(logs.find("Started syncing deployment")), len(logs.find("Deleted pod")))
		if len(logs.bad) > 0 {
			t.Errorf("lines that are not JSON: %q", logs.bad)
		}
		for _, want := range []struct {
			msg   string
			level float64
			keys  []string
			match map[string]any
		}{
			{"Started syncing deployment", 4, []string{"deployment", "startTime"}, nil},
			{"Finished syncing deployment", 4, []string{"deployment", "duration"}, nil},
			{"Started syncing", 4, []string{"kind", "key", "startTime"}, map[string]any{"kind": "ReplicaSet"}},
			{"Finished syncing", 4, []string{"kind", "key", "duration"}, map[string]any{"kind": "ReplicaSet"}},
			{"Created pod", 4, []string{"pod", "replicaSet"}, nil},
			{"Deleted pod", 4, []string{"pod", "replicaSet"}, nil},
			// client-go's event broadcaster, as in kube-controller-manager.
			{"Event occurred", 3, []string{"object", "kind", "reason", "message"}, map[string]any{"kind": "Deployment", "reason": "ScalingReplicaSet"}},
			{"Event occurred", 3, []string{"object", "kind", "reason", "message"}, map[string]any{"kind": "ReplicaSet", "reason": "SuccessfulCreate"}},
		} {
			lines := slices.DeleteFunc(logs.find(want.msg), func(m map[string]any) bool {
				for k, v := range want.match {
					if m[k] != v {
						return true
					}
				}
				return false
			})
			if len(lines) == 0 {
				t.Errorf("no %q line matching %v", want.msg, want.match)
				continue
			}
			for _, m := range lines {
				if m["level"] != want.level {
					t.Errorf("%q at level %v; want %v", want.msg, m["level"], want.level)
				}
				for _, k := range want.keys {
					if _, ok := m[k]; !ok {
						t.Errorf("%q line lacks key %q: %v", want.msg, k, m)
					}
				}
			}
		}
		// A clean rollout logs no error.
		for _, m := range logs.lines {
			if _, ok := m["error"]; ok {
				t.Errorf("error logged during a clean rollout: %v", m)
			}
		}
	})
}

// waitComplete lets virtual time pass until web runs image on all its
// replicas and its old ReplicaSets are empty, as kubectl rollout status
// sees it.
func waitComplete(t *testing.T, c *memcluster.Cluster, image string) {
	t.Helper()
	for range 600 {
		synctest.Wait()
		d, err := c.Deployments("ns").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if complete(d, image) {
			return
		}
		time.Sleep(time.Second) // virtual: the bubble's clock
	}
	t.Fatalf("web not rolled out to %s after 10 virtual minutes", image)
}

func complete(d *appsv1.Deployment, image string) bool {
	st, want := d.Status, *d.Spec.Replicas
	return d.Spec.Template.Spec.Containers[0].Image == image && st.ObservedGeneration >= d.Generation &&
		st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want
}
