package clustertest_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// The tests of this file put faults on every kind of client a test and
// an operator use: the operator's Manager (its cache's lists and watches,
// its cached client's writes, status writes and events, its uncached
// APIReader), the test's own client (Cluster.Client), a typed clientset,
// a dynamic client, and a raw watch the test keeps open.

// everyClient runs the App operator with every kind of client beside it,
// on seed and faults, with n Apps of n replicas, and returns the trace. It
// fails the test (never the binary) when the apps are not ready within
// limit (virtual time) after they are created, and again after they are
// updated.
func everyClient(t *testing.T, seed uint64, faults memcluster.Faults, limit time.Duration, n int) []string {
	var trace []string
	opts := benchOptions(t, seed)
	opts.Kubelet.Model = memcluster.RandomModel(memcluster.DefaultPodBehavior(), time.Second, 10*time.Second)
	opts.Faults = faults
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		ctx := t.Context()
		startEveryClientOperator(t, c)
		c.Advance(time.Second)

		cs, err := kubernetes.NewForConfig(c.Config())
		if err != nil {
			t.Fatal(err)
		}
		dyn, err := dynamic.NewForConfig(c.Config())
		if err != nil {
			t.Fatal(err)
		}
		events := rawWatch(ctx, cs)

		for i := range n {
			name := fmt.Sprintf("app-%d", i)
			persist(t, "create App "+name, func() error { return c.Client().Create(ctx, newApp(name, "nginx:1", int32(n))) })
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"image": "nginx:1"}}
			persist(t, "create ConfigMap "+name, func() error {
				_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
				return err
			})
		}
		c.MustRunUntil("apps ready", appsReadyTolerant(c, n), limit)

		apps := dyn.Resource(appGV.WithResource("apps")).Namespace("default")
		for i := range n {
			name := fmt.Sprintf("app-%d", i)
			persist(t, "update App "+name+" (dynamic)", func() error {
				u, err := apps.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if err := unstructured.SetNestedField(u.Object, "nginx:2", "spec", "image"); err != nil {
					return err
				}
				_, err = apps.Update(ctx, u, metav1.UpdateOptions{})
				return err
			})
			persist(t, "patch ConfigMap "+name, func() error {
				_, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"image":"nginx:2"}}`), metav1.PatchOptions{})
				return err
			})
		}
		persist(t, "delete ConfigMap app-0", func() error {
			err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "app-0", metav1.DeleteOptions{})
			if err != nil && strings.Contains(err.Error(), "not found") {
				return nil // an injected error after the delete took effect
			}
			return err
		})
		c.MustRunUntil("apps updated", appsReadyTolerant(c, n), limit)
		if events() == 0 {
			t.Error("the raw watch of deployments saw no event")
		}
		trace = c.Trace()
	})
	return trace
}

// persist retries f, as a careful test does against a flaky API server:
// every virtual 100 ms, for a virtual minute at most (no jitter: jitter
// would draw from the global source, which is seeded, but keep replay
// simple).
func persist(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil {
			return
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("%s: still failing after a virtual minute: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// appsReadyTolerant is appsReady, treating a failed list (an injected
// fault) as not ready yet rather than as a failure of the test.
func appsReadyTolerant(c *clustertest.Cluster, want int) func() bool {
	return func() bool {
		var l AppList
		if err := c.Client().List(context.Background(), &l); err != nil {
			return false
		}
		n := 0
		for _, a := range l.Items {
			if a.Status.Ready && a.Status.ObservedGeneration == a.Generation {
				n++
			}
		}
		return n == want
	}
}

// rawWatch watches deployments with cs until ctx ends, watching again
// whenever the watch ends (a dropped watch) or fails, and returns a
// function counting the events seen.
func rawWatch(ctx context.Context, cs kubernetes.Interface) func() int {
	var mu sync.Mutex
	seen := 0
	go func() {
		rv := ""
		for ctx.Err() == nil {
			w, err := cs.AppsV1().Deployments("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					rv = "" // too old: start again from now
					break
				}
				if d, ok := ev.Object.(*appsv1.Deployment); ok {
					rv = d.ResourceVersion
				}
				mu.Lock()
				seen++
				mu.Unlock()
			}
			w.Stop()
		}
	}()
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// startEveryClientOperator runs the App operator, which also reads each
// App through the Manager's uncached APIReader and records an event per
// reconcile.
func startEveryClientOperator(t *testing.T, c *clustertest.Cluster) {
	mgr := c.NewManager(ctrl.Options{})
	r := &appReconciler{Client: mgr.GetClient(), now: c.Now}
	reader := mgr.GetAPIReader()
	rec := mgr.GetEventRecorderFor("app-controller")
	err := ctrl.NewControllerManagedBy(mgr).
		For(&App{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			var live App
			if err := reader.Get(ctx, req.NamespacedName, &live); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			res, err := r.Reconcile(ctx, req)
			if err != nil {
				rec.Eventf(&live, corev1.EventTypeWarning, "SyncFailed", "%v", err)
			} else {
				rec.Event(&live, corev1.EventTypeNormal, "Synced", "in sync")
			}
			return res, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	c.Start(mgr)
}

// faultsOnEveryClient is a fault on every verb, and lagging and dropped
// watches: every client meets some.
func faultsOnEveryClient() memcluster.Faults {
	return memcluster.Faults{
		Rules: []memcluster.FaultRule{
			{Verb: "get", Rate: 0.15, Reason: metav1.StatusReasonTooManyRequests},
			{Verb: "get", Latency: 20 * time.Millisecond},
			{Verb: "list", Rate: 0.1, Reason: metav1.StatusReasonInternalError},
			{Verb: "watch", Rate: 0.1, Reason: metav1.StatusReasonServiceUnavailable},
			{Verb: "create", Rate: 0.1, Reason: metav1.StatusReasonServiceUnavailable},
			{Verb: "create", Latency: 50 * time.Millisecond},
			{Verb: "update", Rate: 0.15, Reason: metav1.StatusReasonConflict},
			{Verb: "update/status", Rate: 0.1, Reason: metav1.StatusReasonServerTimeout},
			{Verb: "patch", Rate: 0.15, Reason: metav1.StatusReasonInternalError},
			{Verb: "delete", Rate: 0.2, Reason: metav1.StatusReasonTooManyRequests, AfterWrite: true},
		},
		WatchLag:      10 * time.Millisecond,
		WatchDropRate: 0.02,
	}
}

// TestSameSeedSameTraceWithFaultsOnEveryClient: with faults on every
// verb, for every kind of client, a seed gives one trace (request by
// request, with the faults each met). CLUSTERTEST_REPLAY_RUNS sets the
// number of runs (3 by default).
func TestSameSeedSameTraceWithFaultsOnEveryClient(t *testing.T) {
	runs := 3
	if n, err := strconv.Atoi(os.Getenv("CLUSTERTEST_REPLAY_RUNS")); err == nil && n > 0 {
		runs = n
	}
	first := everyClient(t, 11, faultsOnEveryClient(), time.Hour, 3)
	if t.Failed() {
		return
	}
	joined := strings.Join(first, "\n")
	for _, want := range []string{"429 TooManyRequests)", "409 Conflict)", "500 InternalError)", "500 ServerTimeout)",
		"503 ServiceUnavailable)", "dropped (injected)", "from client ", "from manager ", "from config ", "from config#2 "} {
		if !strings.Contains(joined, want) {
			t.Errorf("the trace has no %q: the faults do not reach every client", want)
		}
	}
	for run := 2; run <= runs; run++ {
		again := everyClient(t, 11, faultsOnEveryClient(), time.Hour, 3)
		if !slices.Equal(first, again) {
			t.Fatalf("run %d differs from run 1:\n%s", run, firstDifference(first, again))
		}
	}
	t.Logf("%d runs, one trace of %d lines, sha256 %x", runs, len(first), sha256.Sum256([]byte(joined)))
}

func firstDifference(a, b []string) string {
	i := 0
	for i < min(len(a), len(b)) && a[i] == b[i] {
		i++
	}
	from := max(0, i-3)
	return fmt.Sprintf("at line %d of %d/%d:\nfirst:\n%s\nagain:\n%s", i, len(a), len(b),
		strings.Join(a[from:min(i+5, len(a))], "\n"), strings.Join(b[from:min(i+5, len(b))], "\n"))
}

// The fault matrix: every fault on every verb, for every client at once.
// A child process runs the benches (TestFaultMatrixChild, one process per
// fault), so that a bench that took its binary down would show as a dead
// child rather than kill this test.

var matrixVerbs = []string{"get", "list", "watch", "create",
	"update", "update/status", "patch", "delete"}

// matrixFaults are the faults of the matrix, by name: an error on every
// request of a verb (at a rate, and always), latency on every request of
// a verb, or a watch fault.
var matrixFaults = map[string]func(string, float64) memcluster.Faults{
	"409":     errorRule(metav1.StatusReasonConflict),
	"429":     errorRule(metav1.StatusReasonTooManyRequests),
	"500":     errorRule(metav1.StatusReasonInternalError),
	"503":     errorRule(metav1.StatusReasonServiceUnavailable),
	"timeout": errorRule(metav1.StatusReasonServerTimeout),
	"latency": func(v string, rate float64) memcluster.Faults {
		return memcluster.Faults{Rules: []memcluster.FaultRule{{Verb: v, Latency: time.Duration(rate * float64(2*time.Second))}}}
	},
	"lag": func(_ string, rate float64) memcluster.Faults {
		return memcluster.Faults{WatchLag: time.Duration(rate * float64(5*time.Second))}
	},
	"drop": func(_ string, rate float64) memcluster.Faults { return memcluster.Faults{WatchDropRate: rate} },
}

func errorRule(e metav1.StatusReason) func(string, float64) memcluster.Faults {
	return func(v string, rate float64) memcluster.Faults {
		return memcluster.Faults{Rules: []memcluster.FaultRule{{Verb: v, Rate: rate, Reason: e}}}
	}
}

// matrixRates are the rates each fault is tried at: often, and always.
var matrixRates = []float64{0.3, 1}

// matrixCases are the benches of the matrix, by subtest name
// ("409/update-status/0.3"): every fault on every verb it applies to, at
// every rate.
func matrixCases() map[string]memcluster.Faults {
	cases := map[string]memcluster.Faults{}
	for name, fault := range matrixFaults {
		verbs := matrixVerbs
		if name == "lag" || name == "drop" {
			verbs = []string{"watch"} // not a request fault
		}
		for _, v := range verbs {
			for _, rate := range matrixRates {
				cases[fmt.Sprintf("%s/%s/%v", name, strings.ReplaceAll(string(v), "/", "-"), rate)] = fault(v, rate)
			}
		}
	}
	return cases
}

// TestFaultMatrixChild runs the benches of the matrix, in parallel, in the
// child process of TestEveryFaultEndsInATestResult.
func TestFaultMatrixChild(t *testing.T) {
	if os.Getenv("CLUSTERTEST_FAULTS") == "" {
		t.Skip("run by TestEveryFaultEndsInATestResult in a child process")
	}
	cases := matrixCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			everyClient(t, 5, cases[name], 10*time.Minute, 2)
		})
	}
}

// TestEveryFaultEndsInATestResult drives every fault of the matrix on
// every verb, for every client, in a child process, and checks that each
// bench ends green or with a test failure that says why, and that the
// child does not die (a panic, a synctest deadlock, a fatal error).
func TestEveryFaultEndsInATestResult(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault matrix takes a while")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultMatrixChild$", "-test.v", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), "CLUSTERTEST_FAULTS=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		t.Fatalf("the child died (%v):\n%s", err, tail(out))
	}
	for _, dead := range []string{"panic: ", "fatal error: ", "[recovered]"} {
		if bytes.Contains(out, []byte(dead)) {
			t.Fatalf("the child's output has %q:\n%s", dead, tail(out))
		}
	}
	// In -test.v output the log lines of a subtest follow a line naming it
	// ("=== RUN", "=== CONT", "=== NAME"); the results come when the
	// parent test ends.
	naming := regexp.MustCompile(`^=== (?:RUN|CONT|NAME|PAUSE)\s+TestFaultMatrixChild/(\S+)$`)
	result := regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): TestFaultMatrixChild/(\S+) `)
	messages := map[string]string{}
	results := map[string]string{}
	current := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := naming.FindStringSubmatch(line); m != nil {
			current = m[1]
			continue
		}
		if m := result.FindStringSubmatch(line); m != nil {
			results[m[2]] = m[1]
			continue
		}
		if current != "" && messages[current] == "" && testMessage.MatchString(line) {
			messages[current] = strings.TrimSpace(line)
		}
	}
	cases := matrixCases()
	green := map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		fault, _, _ := strings.Cut(name, "/")
		switch results[name] {
		case "PASS":
			green[fault]++
		case "FAIL":
			msg := messages[name]
			if msg == "" {
				t.Errorf("%s failed without a message", name)
			}
			if len(msg) > 300 {
				msg = msg[:300] + "…"
			}
			t.Logf("%s: %s", name, msg)
		default:
			t.Errorf("%s: no result (%q): the child stopped early?\n%s", name, results[name], tail(out))
		}
	}
	// A manager whose lists always fail gives up on its caches: RunUntil
	// says so at once.
	for _, fault := range []string{"409", "429", "500", "503", "timeout"} {
		if m := messages[fault+"/list/1"]; !strings.Contains(m, "clustertest: stopped with an error") {
			t.Errorf("%s/list/1: %q, want RunUntil to stop when the manager stopped", fault, m)
		}
	}
	t.Logf("%d benches; green by fault: %v; the others failed with a message", len(cases), green)
}

// testMessage matches a line a test logged ("    file_test.go:12: …").
var testMessage = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

func tail(out []byte) string {
	if len(out) > 4000 {
		out = out[len(out)-4000:]
	}
	return string(out)
}
