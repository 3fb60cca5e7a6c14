package webapp_test

// The tests of the WebApp operator, written once and run on three
// backends (see backends below):
//
//   - bench: ctrlkit's clustertest, an in-memory API server with the
//     built-in Deployment, ReplicaSet and garbage-collection controllers and
//     a simulated kubelet, on the virtual clock of a synctest bubble;
//   - envtest: controller-runtime's envtest, a real etcd and kube-apiserver
//     (no kube-controller-manager), when CTRLKIT_CONTROLPLANE_BIN names the
//     directory of their binaries (bash kube/hack/controlplane.sh bin);
//   - fake: controller-runtime's fake client, with the test calling
//     Reconcile (there are no watches, no manager and no clock).
//
// Each test states what it needs from a backend (need); a backend that
// cannot provide it skips the test, saying why.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/examples/controllerruntime/webapp"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// --- The tests -----------------------------------------------------------

// TestOwnedObjects: a WebApp gets a Deployment and a Service controlled by
// it, and a change of its spec reaches both.
func TestOwnedObjects(t *testing.T) {
	forEachBackend(t, 1, func(t *testing.T, b backend) {
		ctx := t.Context()
		app := newApp(b.Namespace(), "shop", "nginx:1.27", 3)
		if err := b.Client().Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(app)
		b.RunUntil(t, "the deployment and service exist", converged(t, b, key, "nginx:1.27", 3, 8080), time.Minute)

		dep, svc := getOwned(t, b, key)
		app = getApp(t, b, key)
		for _, obj := range []client.Object{dep, svc} {
			if !metav1.IsControlledBy(obj, app) {
				t.Errorf("%T %s is not controlled by the WebApp: owner references %v", obj, obj.GetName(), obj.GetOwnerReferences())
			}
		}
		if diff := cmp.Diff(webapp.Labels(app), dep.Spec.Selector.MatchLabels); diff != "" {
			t.Errorf("deployment selector (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(webapp.Labels(app), svc.Spec.Selector); diff != "" {
			t.Errorf("service selector (-want +got):\n%s", diff)
		}
		clusterIP := svc.Spec.ClusterIP

		updateApp(t, b, key, func(a *webapp.WebApp) {
			a.Spec.Image, a.Spec.Replicas, a.Spec.Port = "nginx:1.28", ptr.To[int32](5), 9090
		})
		b.RunUntil(t, "the deployment and service follow the new spec", converged(t, b, key, "nginx:1.28", 5, 9090), time.Minute)
		if _, svc := getOwned(t, b, key); svc.Spec.ClusterIP != clusterIP {
			t.Errorf("service clusterIP changed from %q to %q", clusterIP, svc.Spec.ClusterIP)
		}
	})
}

// TestRollout: a WebApp becomes ready when its Deployment is Available,
// and again after a new image has rolled out; every state the Deployment
// went through keeps its rollout bounds (planner.Check).
func TestRollout(t *testing.T) {
	forEachBackend(t, 2, func(t *testing.T, b backend) {
		need(t, b, deploymentControllers)
		ctx := t.Context()
		app := newApp(b.Namespace(), "shop", "nginx:1.27", 3)
		if err := b.Client().Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(app)
		b.RunUntil(t, "nginx:1.27 ready", ready(t, b, key, "nginx:1.27"), time.Hour)

		updateApp(t, b, key, func(a *webapp.WebApp) { a.Spec.Image = "nginx:1.28" })
		b.RunUntil(t, "not ready during the rollout", func() bool {
			app := getApp(t, b, key)
			return app.Status.ObservedGeneration == app.Generation && !app.Status.Ready
		}, time.Hour)
		b.RunUntil(t, "nginx:1.28 ready", ready(t, b, key, "nginx:1.28"), time.Hour)
		if got := getApp(t, b, key).Status.AvailableReplicas; got != 3 {
			t.Errorf("status.availableReplicas = %d, want 3", got)
		}
		if err := b.Check(); err != nil {
			t.Error(err)
		}
	})
}

// TestHourlyRecheck: a ready WebApp is looked at again every hour, exactly,
// and not in between.
func TestHourlyRecheck(t *testing.T) {
	forEachBackend(t, 3, func(t *testing.T, b backend) {
		need(t, b, deploymentControllers, virtualTime)
		app := newApp(b.Namespace(), "shop", "nginx:1.27", 2)
		if err := b.Client().Create(t.Context(), app); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(app)
		b.RunUntil(t, "ready", ready(t, b, key, "nginx:1.27"), time.Hour)
		readyAt := b.Now()

		var checks []time.Time
		for range 3 {
			last := getApp(t, b, key).Status.LastChecked
			b.RunUntil(t, "the next check", func() bool {
				return !getApp(t, b, key).Status.LastChecked.Equal(last)
			}, 2*webapp.RecheckInterval)
			checks = append(checks, b.Now())
		}
		if d := checks[0].Sub(readyAt); d <= 0 || d > webapp.RecheckInterval {
			t.Errorf("first check %v after ready, want within %v", d, webapp.RecheckInterval)
		}
		for i := 1; i < len(checks); i++ {
			if d := checks[i].Sub(checks[i-1]); d != webapp.RecheckInterval {
				t.Errorf("check %d came %v after the one before, want %v", i+1, d, webapp.RecheckInterval)
			}
		}
	})
}

// TestDeletionCascades: deleting a WebApp deletes its Deployment and
// Service, and with them the ReplicaSets and pods, through owner
// references alone.
func TestDeletionCascades(t *testing.T) {
	forEachBackend(t, 4, func(t *testing.T, b backend) {
		need(t, b, deploymentControllers, garbageCollector)
		ctx := t.Context()
		app := newApp(b.Namespace(), "shop", "nginx:1.27", 3)
		if err := b.Client().Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(app)
		b.RunUntil(t, "ready", ready(t, b, key, "nginx:1.27"), time.Hour)
		if rss, pods := countOwned(t, b, app); rss == 0 || pods != 3 {
			t.Fatalf("before deletion: %d ReplicaSets and %d pods, want some and 3", rss, pods)
		}

		if err := b.Client().Delete(ctx, app); err != nil {
			t.Fatal(err)
		}
		b.RunUntil(t, "everything of the WebApp is gone", func() bool {
			for _, obj := range []client.Object{&webapp.WebApp{}, &appsv1.Deployment{}, &corev1.Service{}} {
				if err := b.Client().Get(ctx, key, obj); !apierrors.IsNotFound(err) {
					return false
				}
			}
			rss, pods := countOwned(t, b, app)
			return rss == 0 && pods == 0
		}, time.Hour)
	})
}

// TestConflictStorm: with 60% of the operator's updates answered 409
// Conflict, a WebApp goes through three image changes: the Deployment and
// Service follow each, and the last image is rolled out and ready.
func TestConflictStorm(t *testing.T) {
	forEachBackend(t, 5, func(t *testing.T, b backend) {
		key := stormApply(t, b)
		need(t, b, deploymentControllers) // the rest needs pods
		stormReady(t, b, key)
	})
}

// stormApply is the part of TestConflictStorm that needs no pods.
func stormApply(t *testing.T, b backend) types.NamespacedName {
	ctx := t.Context()
	b.StormConflicts(0.6)
	app := newApp(b.Namespace(), "shop", "nginx:1.27", 3)
	if err := retry.RetryOnConflict(testRetry, func() error { return b.Client().Create(ctx, app) }); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(app)
	b.RunUntil(t, "the first spec applied", converged(t, b, key, "nginx:1.27", 3, 8080), time.Hour)
	for _, image := range []string{"nginx:1.28", "nginx:1.29", "nginx:1.30"} {
		updateApp(t, b, key, func(a *webapp.WebApp) { a.Spec.Image = image })
		b.RunUntil(t, image+" applied", converged(t, b, key, image, 3, 8080), time.Hour)
	}
	if n, writes := b.Conflicts(); n < 3 || 4*n < writes {
		t.Errorf("%d of the operator's %d writes failed with 409: not a storm", n, writes)
	} else {
		t.Logf("%d of the operator's %d writes failed with 409", n, writes)
	}
	return key
}

// stormReady is the rest of TestConflictStorm: the last image rolls out,
// and every state the Deployment went through keeps its rollout bounds.
// (With image changes in quick succession the Deployment controller can
// sync from a cached Deployment one template behind and roll that template
// forward, as kube-controller-manager does; planner.Check allows it while
// the newer generation is unobserved.)
func stormReady(t *testing.T, b backend, key types.NamespacedName) {
	b.RunUntil(t, "nginx:1.30 ready", ready(t, b, key, "nginx:1.30"), time.Hour)
	if err := b.Check(); err != nil {
		t.Error(err)
	}
}

// TestSameSeedSameTrace: the conflict storm, run twice with the same seed,
// writes the same things in the same order at the same times (on the
// fake client, where there is no rollout, up to the last image applied).
func TestSameSeedSameTrace(t *testing.T) {
	for _, def := range backends {
		t.Run(def.name, func(t *testing.T) {
			var traces [2][]string
			for i := range traces {
				def.run(t, 6, func(t *testing.T, b backend) {
					need(t, b, replay)
					key := stormApply(t, b)
					if b.Lacks(deploymentControllers) == "" {
						stormReady(t, b, key)
					}
					traces[i] = b.Trace()
				})
			}
			if t.Skipped() || t.Failed() {
				return
			}
			if len(traces[0]) == 0 {
				t.Fatal("empty trace")
			}
			if diff := cmp.Diff(traces[0], traces[1]); diff != "" {
				t.Errorf("the second run differs (-first +second):\n%s", diff)
			}
			t.Logf("%d trace lines, identical", len(traces[0]))
		})
	}
}

// TestCRD: the CRD manifest parses and describes the Go type.
func TestCRD(t *testing.T) {
	crd := webapp.CRD()
	if crd.Spec.Group != webapp.GroupVersion.Group || crd.Spec.Names.Kind != "WebApp" || crd.Name != "webapps."+webapp.GroupVersion.Group {
		t.Errorf("CRD %s: group %s kind %s", crd.Name, crd.Spec.Group, crd.Spec.Names.Kind)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != webapp.GroupVersion.Version || crd.Spec.Versions[0].Subresources.Status == nil {
		t.Errorf("CRD versions %+v: want %s with a status subresource", crd.Spec.Versions, webapp.GroupVersion.Version)
	}
}

// --- What the tests look at ----------------------------------------------

func newApp(ns, name, image string, replicas int32) *webapp.WebApp {
	return &webapp.WebApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       webapp.WebAppSpec{Image: image, Replicas: &replicas},
	}
}

func getApp(t *testing.T, b backend, key types.NamespacedName) *webapp.WebApp {
	t.Helper()
	var app webapp.WebApp
	if err := b.Client().Get(t.Context(), key, &app); err != nil {
		t.Fatal(err)
	}
	return &app
}

// getOwned returns the WebApp's Deployment and Service, or nils.
func getOwned(t *testing.T, b backend, key types.NamespacedName) (*appsv1.Deployment, *corev1.Service) {
	t.Helper()
	dep, svc := &appsv1.Deployment{}, &corev1.Service{}
	for _, obj := range []client.Object{dep, svc} {
		if err := b.Client().Get(t.Context(), key, obj); apierrors.IsNotFound(err) {
			return nil, nil
		} else if err != nil {
			t.Fatal(err)
		}
	}
	return dep, svc
}

// testRetry is how the test retries its own writes in a conflict storm:
// retry.DefaultRetry but without jitter, which would draw from the
// unseeded global source and make runs differ.
var testRetry = wait.Backoff{Steps: 20, Duration: 10 * time.Millisecond, Factor: 1}

// updateApp changes the WebApp's spec, retrying on conflicts.
func updateApp(t *testing.T, b backend, key types.NamespacedName, change func(*webapp.WebApp)) {
	t.Helper()
	err := retry.RetryOnConflict(testRetry, func() error {
		app := getApp(t, b, key)
		change(app)
		return b.Client().Update(t.Context(), app)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// converged reports whether the WebApp's status has seen its current spec,
// and its Deployment and Service have the image, replicas and port.
func converged(t *testing.T, b backend, key types.NamespacedName, image string, replicas, port int32) func() bool {
	return func() bool {
		app := getApp(t, b, key)
		dep, svc := getOwned(t, b, key)
		if dep == nil || app.Status.ObservedGeneration != app.Generation {
			return false
		}
		pod := dep.Spec.Template.Spec
		return *dep.Spec.Replicas == replicas && len(pod.Containers) == 1 && pod.Containers[0].Image == image &&
			len(pod.Containers[0].Ports) == 1 && pod.Containers[0].Ports[0].ContainerPort == port &&
			len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].Port == port && svc.Spec.Ports[0].TargetPort.IntVal == port
	}
}

// ready reports whether the WebApp says it is ready at its current spec,
// its Deployment runs image, and every pod of the WebApp runs image and is
// Ready.
func ready(t *testing.T, b backend, key types.NamespacedName, image string) func() bool {
	return func() bool {
		app := getApp(t, b, key)
		dep, _ := getOwned(t, b, key)
		if !app.Status.Ready || app.Status.ObservedGeneration != app.Generation || dep == nil || dep.Spec.Template.Spec.Containers[0].Image != image {
			return false
		}
		var pods corev1.PodList
		if err := b.Client().List(t.Context(), &pods, client.InNamespace(key.Namespace), client.MatchingLabels(webapp.Labels(app))); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				return false // an old pod still terminating
			}
			if p.Spec.Containers[0].Image != image || !podReady(&p) {
				return false
			}
			n++
		}
		return n == int(webapp.Replicas(app))
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// countOwned counts the ReplicaSets and pods with the WebApp's labels.
func countOwned(t *testing.T, b backend, app *webapp.WebApp) (rss, pods int) {
	t.Helper()
	var rsl appsv1.ReplicaSetList
	var pl corev1.PodList
	for _, l := range []client.ObjectList{&rsl, &pl} {
		if err := b.Client().List(t.Context(), l, client.InNamespace(app.Namespace), client.MatchingLabels(webapp.Labels(app))); err != nil {
			t.Fatal(err)
		}
	}
	return len(rsl.Items), len(pl.Items)
}

// --- Backends ------------------------------------------------------------

// A capability is something a test needs from a backend.
type capability int

const (
	// deploymentControllers: Deployments get ReplicaSets, pods that become
	// Ready, and status.
	deploymentControllers capability = iota
	// garbageCollector: deleting an owner deletes its dependents.
	garbageCollector
	// virtualTime: RequeueAfter: time.Hour comes back one hour later,
	// without an hour of waiting.
	virtualTime
	// replay: the same seed gives the same trace of writes.
	replay
)

// backend is what the tests run on: a cluster (or what stands for one)
// with the WebApp operator running against it.
type backend interface {
	// Client is the test's own client. It is uncached.
	Client() client.Client
	// Namespace is the test's namespace, already created.
	Namespace() string
	// RunUntil lets the operator (and the cluster's controllers) work until
	// cond holds, failing the test if it does not within limit (of virtual
	// time where there is some).
	RunUntil(t *testing.T, what string, cond func() bool, limit time.Duration)
	// Now is the backend's time.
	Now() time.Time
	// Lacks says why the backend does not have capability c, or "".
	Lacks(c capability) string
	// StormConflicts makes a fraction rate of the operator's updates and
	// patches (of objects and of their status) fail with 409 Conflict.
	StormConflicts(rate float64)
	// Conflicts is the number of the operator's writes (creates,
	// updates, patches) answered 409, and of all its writes.
	Conflicts() (conflicts, writes int)
	// Check runs planner.Check over every state of the Deployments.
	Check() error
	// Trace is what was written, in order.
	Trace() []string
}

type backendDef struct {
	name string
	run  func(t *testing.T, seed uint64, f func(*testing.T, backend))
}

var backends = []backendDef{{"bench", runBench}, {"envtest", runEnvtest}, {"fake", runFake}}

// need skips the test unless b has every capability.
func need(t *testing.T, b backend, cs ...capability) {
	t.Helper()
	for _, c := range cs {
		if why := b.Lacks(c); why != "" {
			t.Skip(why)
		}
	}
}

// forEachBackend runs f as a subtest on each backend.
func forEachBackend(t *testing.T, seed uint64, f func(*testing.T, backend)) {
	for _, def := range backends {
		t.Run(def.name, func(t *testing.T) { def.run(t, seed, f) })
	}
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, webapp.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// conflicts counts the 409s the operator's client is answered, and (for
// the backends whose API server cannot inject them) injects them.
type conflicts struct {
	inject bool
	seen   atomic.Int64
	writes atomic.Int64
	mu     sync.Mutex
	rnd    *rand.Rand
	rate   float64
	trace  []string
}

func newConflicts(seed uint64, inject bool) *conflicts {
	return &conflicts{inject: inject, rnd: rand.New(rand.NewPCG(seed, 409))}
}

func (cf *conflicts) counts() (conflicts, writes int) {
	return int(cf.seen.Load()), int(cf.writes.Load())
}

func (cf *conflicts) setRate(rate float64) {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	cf.rate = rate
}

// write runs one write of the operator's, failing it first if the dice
// say so, and records it.
func (cf *conflicts) write(verb string, obj client.Object, do func() error) error {
	cf.mu.Lock()
	var err error
	if cf.inject && cf.rate > 0 && cf.rnd.Float64() < cf.rate {
		gvk, _ := apiutil.GVKForObject(obj, scheme)
		err = apierrors.NewConflict(gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind)+"s").GroupResource(), obj.GetName(), errors.New("injected"))
	}
	cf.mu.Unlock()
	if err == nil {
		err = do()
	}
	cf.writes.Add(1)
	if apierrors.IsConflict(err) {
		cf.seen.Add(1)
	}
	cf.mu.Lock()
	cf.trace = append(cf.trace, fmt.Sprintf("%s %T %s/%s rv=%s err=%v", verb, obj, obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion(), err))
	cf.mu.Unlock()
	return err
}

// wrap returns c with the operator's writes going through cf.
func (cf *conflicts) wrap(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return cf.write("create", obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return cf.write("update", obj, func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return cf.write("patch", obj, func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return cf.write("update/"+sub, obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return cf.write("patch/"+sub, obj, func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
	})
}

// newClientFunc is a Manager's NewClient with the operator's client
// wrapped by cf.
func (cf *conflicts) newClientFunc(cfg *rest.Config, opts client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(cfg, opts)
	if err != nil {
		return nil, err
	}
	return cf.wrap(c), nil
}

var scheme = newScheme()

func setupOperator(mgr manager.Manager) error {
	return (&webapp.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}).SetupWithManager(mgr)
}

// bench: ctrlkit's clustertest.

type bench struct {
	c  *clustertest.Cluster
	cf *conflicts
}

func runBench(t *testing.T, seed uint64, f func(*testing.T, backend)) {
	opts := clustertest.Options{Seed: seed, Scheme: scheme, Types: []client.Object{&webapp.WebApp{}}}
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		b := &bench{c: c, cf: newConflicts(seed, false)}
		mgr := c.NewManager(manager.Options{Logger: logr.Discard(), NewClient: b.cf.newClientFunc})
		if err := setupOperator(mgr); err != nil {
			t.Fatal(err)
		}
		c.Start(mgr)
		f(t, b)
		t.Logf("virtual time: %v", c.Now())
	})
}

func (b *bench) Client() client.Client   { return b.c.Client() }
func (b *bench) Namespace() string       { return "default" }
func (b *bench) Now() time.Time          { return time.Now() }
func (b *bench) Lacks(capability) string { return "" }
func (b *bench) Conflicts() (int, int)   { return b.cf.counts() }
func (b *bench) Check() error            { return b.c.Check() }
func (b *bench) Trace() []string         { return b.c.Trace() }
func (b *bench) RunUntil(t *testing.T, what string, cond func() bool, limit time.Duration) {
	t.Helper()
	b.c.MustRunUntil(what, cond, limit)
}

// StormConflicts injects the 409s in the API server: every client's
// updates and patches fail alike, the built-in controllers' and the
// test's as well as the operator's.
func (b *bench) StormConflicts(rate float64) {
	var rules []memcluster.FaultRule
	for _, v := range []string{"update", "update/status", "patch"} {
		rules = append(rules, memcluster.FaultRule{Verb: v, Rate: rate, Reason: metav1.StatusReasonConflict})
	}
	b.c.SetFaults(memcluster.Faults{Rules: rules})
}

// envtest: a real etcd and kube-apiserver, shared by the tests (each in a
// namespace of its own), started on first use.

var envtestServer struct {
	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	err  error
	n    atomic.Int64
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if env := envtestServer.env; env != nil && envtestServer.err == nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
			code = 1
		}
	}
	os.Exit(code)
}

type envtestBackend struct {
	c  client.Client
	ns string
	cf *conflicts
}

func runEnvtest(t *testing.T, seed uint64, f func(*testing.T, backend)) {
	dir := os.Getenv("CTRLKIT_CONTROLPLANE_BIN")
	if dir == "" {
		t.Skip("envtest: CTRLKIT_CONTROLPLANE_BIN is not set (the directory of etcd and kube-apiserver: bash kube/hack/controlplane.sh bin)")
	}
	s := &envtestServer
	s.once.Do(func() {
		s.env = &envtest.Environment{BinaryAssetsDirectory: dir, ControlPlaneStartTimeout: 2 * time.Minute,
			CRDInstallOptions: envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{webapp.CRD()}}}
		start := time.Now()
		s.cfg, s.err = s.env.Start()
		t.Logf("envtest started in %v", time.Since(start).Round(time.Millisecond))
	})
	if s.err != nil {
		t.Fatalf("envtest: %v", s.err)
	}
	b := &envtestBackend{ns: fmt.Sprintf("webapp-%d", s.n.Add(1)), cf: newConflicts(seed, true)}
	var err error
	if b.c, err = client.New(s.cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	if err := b.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}}); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(s.cfg, ctrl.Options{
		Scheme: scheme, Logger: logr.Discard(), NewClient: b.cf.newClientFunc,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{b.ns: {}}},
	})
	if err == nil {
		err = setupOperator(mgr)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	f(t, b)
}

func (b *envtestBackend) Client() client.Client       { return b.c }
func (b *envtestBackend) Namespace() string           { return b.ns }
func (b *envtestBackend) Now() time.Time              { return time.Now() }
func (b *envtestBackend) StormConflicts(rate float64) { b.cf.setRate(rate) }
func (b *envtestBackend) Conflicts() (int, int)       { return b.cf.counts() }
func (b *envtestBackend) Check() error                { return errors.New("envtest: no record of Deployment states") }
func (b *envtestBackend) Trace() []string             { return nil }

func (b *envtestBackend) Lacks(c capability) string {
	switch c {
	case deploymentControllers:
		return "envtest runs etcd and kube-apiserver only, no kube-controller-manager: a Deployment never gets ReplicaSets, pods or status"
	case garbageCollector:
		return "envtest runs no garbage collector (it is part of kube-controller-manager): deleting an owner leaves its dependents"
	case virtualTime:
		return "envtest runs on the wall clock: a RequeueAfter of an hour takes an hour"
	case replay:
		return "a real API server's UIDs, timestamps and timing differ from run to run: no replay"
	}
	return ""
}

// RunUntil polls cond: the wall clock is all there is. It waits for at
// most limit or two minutes, whichever is shorter (in a conflict storm,
// the controller's per-item backoff can reach tens of seconds).
func (b *envtestBackend) RunUntil(t *testing.T, what string, cond func() bool, limit time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, min(limit, 2*time.Minute), true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

// fake: controller-runtime's fake client. There is no manager: RunUntil
// calls Reconcile for every WebApp, as a controller would after events.

type fakeBackend struct {
	c  client.Client
	r  *webapp.Reconciler
	cf *conflicts
}

func runFake(t *testing.T, seed uint64, f func(*testing.T, backend)) {
	raw := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&webapp.WebApp{}).Build()
	b := &fakeBackend{c: raw, cf: newConflicts(seed, true)}
	b.r = &webapp.Reconciler{Client: b.cf.wrap(raw), Scheme: scheme}
	f(t, b)
}

func (b *fakeBackend) Client() client.Client       { return b.c }
func (b *fakeBackend) Namespace() string           { return "default" }
func (b *fakeBackend) Now() time.Time              { return time.Now() }
func (b *fakeBackend) StormConflicts(rate float64) { b.cf.setRate(rate) }
func (b *fakeBackend) Conflicts() (int, int)       { return b.cf.counts() }
func (b *fakeBackend) Check() error                { return errors.New("fake: no record of Deployment states") }

// Trace is the operator's writes (with their injected conflicts).
func (b *fakeBackend) Trace() []string {
	b.cf.mu.Lock()
	defer b.cf.mu.Unlock()
	return slices.Clone(b.cf.trace)
}

func (b *fakeBackend) Lacks(c capability) string {
	switch c {
	case deploymentControllers:
		return "the fake client runs no controllers: a Deployment never gets ReplicaSets, pods or status"
	case garbageCollector:
		return "the fake client does not garbage-collect: deleting an owner leaves its dependents"
	case virtualTime:
		return "the fake client has no clock and no manager: nothing comes back after RequeueAfter"
	}
	return ""
}

// RunUntil calls Reconcile for every WebApp until cond holds, for at most
// 1000 rounds; there is no time to limit.
func (b *fakeBackend) RunUntil(t *testing.T, what string, cond func() bool, _ time.Duration) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		var apps webapp.WebAppList
		if err := b.c.List(t.Context(), &apps); err != nil {
			t.Fatal(err)
		}
		for _, app := range apps.Items {
			_, _ = b.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&app)}) // errors: the next round retries
		}
	}
	t.Fatalf("waiting until %s: not after 1000 rounds of Reconcile", what)
}
