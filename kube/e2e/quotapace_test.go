//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
)

// TestQuotaPace measures the rollout a quota slows (pods: 4, 3 replicas,
// maxSurge 2, maxUnavailable 0, image changed) on equal footing: for each
// run, a fresh control plane with ctrlkit's controllers, then a fresh one
// with kube-controller-manager's, one at a time, with the same
// kube-controller-manager quota controller and kubelet. It writes each
// run's timeline (pods, ReplicaSets, the quota, events, the controllers'
// syncs) to CTRLKIT_E2E_QUOTA_DIR if set. CTRLKIT_E2E_QUOTA_RUNS sets the
// number of runs; unset, the test is skipped: one run costs two control
// planes and 1–3 minutes of wall time on a loaded machine, and it measures
// (the completion times vary from 0 to tens of seconds on either side, see
// docs/why.md) rather than checks. The mechanism it measured is checked
// without a cluster by replicaset's TestControllerRetriesARefusedCreateWhenFirstDue
// and the conformance module's TestWorkqueue.
func TestQuotaPace(t *testing.T) {
	s := os.Getenv("CTRLKIT_E2E_QUOTA_RUNS")
	if s == "" {
		t.Skip("a measurement: set CTRLKIT_E2E_QUOTA_RUNS to the number of runs")
	}
	runs, err := strconv.Atoi(s)
	if err != nil || runs < 1 {
		t.Fatalf("CTRLKIT_E2E_QUOTA_RUNS=%q: want a number of runs ≥ 1", s)
	}
	dir := os.Getenv("CTRLKIT_E2E_QUOTA_DIR")
	var rows []string
	for i := range runs {
		for _, upstream := range []bool{false, true} {
			side := "ctrlkit"
			if upstream {
				side = "kube-controller-manager"
			}
			t.Run(fmt.Sprintf("%s-%d", side, i), func(t *testing.T) {
				r := quotaPaceRun(t, upstream)
				rows = append(rows, fmt.Sprintf("  run %d %-24s complete %6.1fs after the update; new ReplicaSet: %d syncs, %d failed; %d creations refused\n",
					i, side, r.took.Seconds(), r.syncs, r.failed, r.refused))
				if dir != "" {
					name := filepath.Join(dir, fmt.Sprintf("run%d-%s.txt", i, side))
					if err := os.WriteFile(name, []byte(r.timeline), 0o644); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	report(t, "quota slows the rollout (pods: 4, 3 replicas, 2/0), each side on a fresh control plane:\n"+strings.Join(rows, ""))
}

// paceResult is one run's measurements.
type paceResult struct {
	took                   time.Duration
	syncs, failed, refused int
	timeline               string
}

func quotaPaceRun(t *testing.T, upstream bool) paceResult {
	ctx := context.Background()
	plane, err := cluster.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := plane.Stop(); err != nil {
			t.Log(err)
		}
	})
	ctrls := "garbage-collector-controller,resourcequota-controller"
	if upstream {
		ctrls += ",deployment-controller,replicaset-controller"
	}
	if err := plane.StartKCM(ctx, ctrls, "--v=4"); err != nil {
		t.Fatal(err)
	}
	tl := &timeline{}
	o := envOptions{cp: plane, noOperator: upstream, readyDelay: 200 * time.Millisecond,
		faults: func(*corev1.Pod) simkubelet.Fault { return simkubelet.Healthy }}
	if !upstream {
		o.logger = funcr.New(func(prefix, args string) { tl.add("ctrlkit " + prefix + " " + args) }, funcr.Options{Verbosity: 4})
	}
	e := newEnv(t, o)
	d := rolling(deployment("web", 3, "app:1"), intstr.FromInt(2), intstr.FromInt(0))
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(1))
	e.create(d)
	e.waitComplete("web", 60*time.Second)
	e.quota(4)
	wctx, stop := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	tl.watch(wctx, &wg, e)
	start := time.Now()
	tl.start(start)
	toApp2(e)
	done := e.waitComplete("web", 4*time.Minute)
	took := done.Sub(start)
	time.Sleep(time.Second) // the last events
	stop()
	wg.Wait()
	if err := tl.kcmLog(filepath.Join(plane.Dir, "kube-controller-manager.log"), e.ns); err != nil {
		t.Error(err)
	}
	newRS := ""
	for _, rs := range e.replicaSets() {
		if rs.Spec.Template.Spec.Containers[0].Image == "app:2" {
			newRS = rs.Name
		}
	}
	r := paceResult{took: took}
	r.timeline, r.syncs, r.failed, r.refused = tl.render(e.ns, newRS)
	t.Logf("complete %v after the update\n%s", took, r.timeline)
	return r
}

// timeline collects stamped lines.
type timeline struct {
	mu    sync.Mutex
	t0    time.Time
	lines []stamped
}

type stamped struct {
	at   time.Time
	what string
}

func (tl *timeline) start(t time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.t0 = t
}

func (tl *timeline) add(what string) { tl.addAt(time.Now(), what) }

func (tl *timeline) addAt(at time.Time, what string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.lines = append(tl.lines, stamped{at, what})
}

// watch records the namespace's pods, ReplicaSets, quotas and events.
func (tl *timeline) watch(ctx context.Context, wg *sync.WaitGroup, e *env) {
	opts := metav1.ListOptions{}
	ws := []func() (watch.Interface, error){
		func() (watch.Interface, error) { return e.cs.CoreV1().Pods(e.ns).Watch(ctx, opts) },
		func() (watch.Interface, error) { return e.cs.AppsV1().ReplicaSets(e.ns).Watch(ctx, opts) },
		func() (watch.Interface, error) { return e.cs.CoreV1().ResourceQuotas(e.ns).Watch(ctx, opts) },
		func() (watch.Interface, error) { return e.cs.CoreV1().Events(e.ns).Watch(ctx, opts) },
	}
	for _, open := range ws {
		w, err := open()
		if err != nil {
			e.t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					tl.add(describe(ev))
				}
			}
		})
	}
}

func describe(ev watch.Event) string {
	switch o := ev.Object.(type) {
	case *corev1.Pod:
		s := fmt.Sprintf("pod %s %s phase=%s node=%q ready=%t", ev.Type, o.Name, o.Status.Phase, o.Spec.NodeName, podIsReady(o))
		if o.DeletionTimestamp != nil {
			s += " deleting"
		}
		return s
	case *appsv1.ReplicaSet:
		s := fmt.Sprintf("rs %s %s spec=%d status=%d/%d/%d gen=%d/%d", ev.Type, o.Name, *o.Spec.Replicas, o.Status.Replicas,
			o.Status.ReadyReplicas, o.Status.AvailableReplicas, o.Status.ObservedGeneration, o.Generation)
		for _, c := range o.Status.Conditions {
			s += fmt.Sprintf(" %s=%s", c.Type, c.Status)
		}
		return s
	case *corev1.ResourceQuota:
		return fmt.Sprintf("quota %s used=%v", ev.Type, o.Status.Used)
	case *corev1.Event:
		msg := o.Message
		if i := strings.Index(msg, ": exceeded quota"); i >= 0 {
			msg = msg[:i] + ": exceeded quota"
		}
		return fmt.Sprintf("event %s %s/%s count=%d %s", o.Reason, o.InvolvedObject.Kind, o.InvolvedObject.Name, o.Count, msg)
	}
	return fmt.Sprintf("%s %T", ev.Type, ev.Object)
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// klogLine matches a klog header: I0514 15:03:01.123456 ...
var klogLine = regexp.MustCompile(`^([IWE])(\d{2})(\d{2}) (\d{2}:\d{2}:\d{2}\.\d{6})\s+\d+ [^\]]+\] (.*)$`)

// kcmLog adds kube-controller-manager's log lines about ns to the timeline.
func (tl *timeline) kcmLog(path, ns string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	now := time.Now()
	for sc.Scan() {
		m := klogLine.FindStringSubmatch(sc.Text())
		if m == nil || !strings.Contains(m[5], ns) {
			continue
		}
		at, err := time.ParseInLocation("2006 0102 15:04:05.000000", fmt.Sprintf("%d %s%s %s", now.Year(), m[2], m[3], m[4]), time.Local)
		if err != nil {
			return err
		}
		tl.addAt(at, "kcm "+m[1]+" "+m[5])
	}
	return sc.Err()
}

// render returns the timeline from t0 on, the lines about ns's
// ReplicaSet newRS counted: syncs finished, syncs that failed, pod
// creations refused.
func (tl *timeline) render(ns, newRS string) (text string, syncs, failed, refused int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	lines := slices.Clone(tl.lines)
	slices.SortStableFunc(lines, func(a, b stamped) int { return a.at.Compare(b.at) })
	var b strings.Builder
	key := ns + "/" + newRS
	for _, l := range lines {
		if l.at.Before(tl.t0.Add(-2 * time.Second)) {
			continue
		}
		w := strings.ReplaceAll(l.what, ns, "NS")
		fmt.Fprintf(&b, "%8.3f %s\n", l.at.Sub(tl.t0).Seconds(), w)
		if l.at.Before(tl.t0) || newRS == "" || !strings.Contains(l.what, key) {
			continue
		}
		switch {
		case strings.Contains(l.what, `"Finished syncing"`) && strings.Contains(l.what, "ReplicaSet"):
			syncs++
		case strings.Contains(l.what, "Error syncing replicaset") || strings.Contains(l.what, "sync \\\""+key):
			failed++
		}
		if strings.Contains(l.what, "exceeded quota") && (strings.Contains(l.what, "Error syncing") || strings.Contains(l.what, "failed with")) {
			refused++
		}
	}
	return b.String(), syncs, failed, refused
}
