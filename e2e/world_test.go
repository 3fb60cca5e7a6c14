package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/gate"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const ns = "default"

// worldConfig configures a world; the zero value is a healthy cluster.
type worldConfig struct {
	Seed    uint64
	Model   memcluster.PodModel // nil: start in 1s, Ready 2s later, stop in 1s
	Workers int                 // per controller; 0 means 5, as kube-controller-manager
	Faults  memcluster.Faults   // injected into the controllers' requests
	// NoChecks skips the invariant replay (the scale benchmark).
	NoChecks bool
	// Mode is how the work of an instant runs; the zero value reads it
	// from the environment (see modeFromEnv): by default one unit at a
	// time, oldest first (clock.NewDeterministic), so that a seed replays
	// exactly.
	Mode clockMode
	// OnRequest, if set, is told of every request the cluster admits
	// (memcluster.Config.OnRequest).
	OnRequest func(context.Context, memcluster.Request)
	// Gate, if set, sees every step of the cluster before it happens
	// (memcluster.Config.Gate), and may end a watch instead of a
	// delivery; in an interleaved world it goes before the turn is given
	// up.
	Gate gate.Gate
	// ScheduleDir is where a failed interleaved world writes the
	// interleaving it took; "" is the system's temporary directory.
	ScheduleDir string
	// SeedEnv says that CTRLKIT_E2E_SEED=Seed selects this world (a
	// randomised run): a failure's replay line sets it.
	SeedEnv bool
	// LateKubelet leaves the kubelet out until the test calls
	// world.startKubelet: the kubelet registers its Nodes when it is made,
	// so until then the cluster is empty (at resourceVersion 0).
	LateKubelet bool
	// FeatureGates are both controllers' feature gates at the start.
	FeatureGates features.Gates
	// BuiltinKinds adds memcluster's built-in kinds (Events among them: the
	// kubelet's rejection events are recorded).
	BuiltinKinds bool
	// Deployment, if set, changes the Deployment controller's config
	// before it is built.
	Deployment func(*deployment.ControllerConfig)
	// ReplicaSet, if set, changes the ReplicaSet controller's config
	// before it is built (upstream's behaviour on an expired expectation,
	// say).
	ReplicaSet func(*replicaset.ControllerConfig)
}

// world is a cluster with both controllers, a kubelet and a recorder of
// every watch event, running until the test ends. When it ends, the
// recorded history is checked against the invariants of package e2e.
type world struct {
	tb     testing.TB
	ctx    context.Context
	fc     *clock.Fake
	c      *memcluster.Cluster
	rec    *recorder
	client *recordingClient
	faults memcluster.Faults
	// dc and rc are the two controllers, and the informers they share.
	dc     *deployment.Controller
	rc     *replicaset.Controller
	dInf   *informer.Informer[*appsv1.Deployment]
	rsInf  *informer.Informer[*appsv1.ReplicaSet]
	podInf *informer.Informer[*corev1.Pod]
	// startKubelet makes the kubelet, which registers its Nodes, and
	// runs it; newWorld calls it unless the config says LateKubelet.
	startKubelet func()
	// seed and mode are the world's config's: a failure says how to
	// replay it.
	seed        uint64
	mode        clockMode
	scheduleDir string
}

// newWorld starts a world; it stops, and its history is checked, in
// tb.Cleanup.
func newWorld(tb testing.TB, cfg worldConfig) *world {
	tb.Helper()
	if cfg.Mode.kind == fromEnv {
		m, err := modeFromEnv(os.Getenv)
		if err != nil {
			tb.Fatal(err)
		}
		cfg.Mode = m
	}
	fc := cfg.Mode.newClock(cfg.Seed, epoch)
	// Watches must not lose events: the recorder sees every one of them.
	mcfg := memcluster.Config{Clock: fc, Seed: cfg.Seed, WatchHistory: 1 << 30, WatchBuffer: 1 << 30, OnRequest: cfg.OnRequest}
	mcfg.Gate = cfg.Gate
	if cfg.Mode.kind == interleaved || cfg.Mode.kind == replayed {
		mcfg.Gate = yieldGate{fc: fc, next: cfg.Gate}
	}
	c := memcluster.New(mcfg)
	if cfg.BuiltinKinds {
		memcluster.AddBuiltinKinds(c)
	}
	if cfg.Model == nil {
		cfg.Model = memcluster.FixedModel(memcluster.PodBehavior{StartDelay: time.Second, ReadyDelay: 2 * time.Second, ShutdownDelay: time.Second})
	}
	if cfg.Workers == 0 {
		cfg.Workers = 5
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The test's own requests are made from outside the simulation.
	w := &world{tb: tb, ctx: context.WithValue(ctx, outside{}, true), fc: fc, c: c, rec: newRecorder(), client: newRecordingClient(c), seed: cfg.Seed, mode: cfg.Mode, scheduleDir: cfg.ScheduleDir}
	// Registered first, so logged last: after the checks below.
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Log(w.replayNote(cfg.SeedEnv))
		}
	})

	var wg sync.WaitGroup
	errc := make(chan error, 16)
	w.rec.start(ctx, &wg, c)
	run := func(name string, f func(context.Context) error) {
		wg.Go(func() {
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	dInf := informer.New(c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: fc})
	rsInf := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	podInf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	dcfg := deployment.ControllerConfig{
		Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Client: w.client, Clock: fc, Workers: cfg.Workers,
		FeatureGates: cfg.FeatureGates,
	}
	if cfg.Deployment != nil {
		cfg.Deployment(&dcfg)
	}
	dc, err := deployment.NewController(dcfg)
	if err != nil {
		tb.Fatal(err)
	}
	rcfg := replicaset.ControllerConfig{
		ReplicaSets: rsInf, Pods: podInf, Client: w.client, Clock: fc, Workers: cfg.Workers,
		FeatureGates: cfg.FeatureGates,
	}
	if cfg.ReplicaSet != nil {
		cfg.ReplicaSet(&rcfg)
	}
	rc, err := replicaset.NewController(rcfg)
	if err != nil {
		tb.Fatal(err)
	}
	w.dc, w.rc = dc, rc
	w.dInf, w.rsInf, w.podInf = dInf, rsInf, podInf
	// The kubelet registers its Nodes before any informer lists, unless
	// the test starts it late.
	var kubelet *memcluster.Kubelet
	if !cfg.LateKubelet {
		kubelet = memcluster.NewKubelet(c, memcluster.KubeletConfig{Model: cfg.Model})
	}
	w.startKubelet = func() {
		if kubelet == nil { // its registration is the test's write: no faults
			w.c.SetFaults(memcluster.Faults{})
			kubelet = memcluster.NewKubelet(c, memcluster.KubeletConfig{Model: cfg.Model})
			w.c.SetFaults(w.faults)
		}
		wg.Go(func() { kubelet.Run(ctx) })
	}
	run("deployment informer", dInf.Run)
	run("replicaset informer", rsInf.Run)
	run("pod informer", podInf.Run)
	run("deployment controller", dc.Run)
	run("replicaset controller", rc.Run)
	if !cfg.LateKubelet {
		w.startKubelet()
	}
	w.setFaults(cfg.Faults)

	tb.Cleanup(func() {
		cancel()
		wg.Wait()
		close(errc)
		for err := range errc {
			tb.Error(err)
		}
		if cfg.NoChecks {
			return
		}
		for i, v := range check(w.rec.history(), w.client.deleted(), w.client.failedCreates()) {
			if i == 20 {
				tb.Errorf("... and more invariant violations")
				break
			}
			tb.Errorf("invariant violated: %s", v)
		}
	})
	return w
}

// setFaults sets the faults injected into the controllers' requests.
func (w *world) setFaults(f memcluster.Faults) {
	w.faults = f
	w.c.SetFaults(f)
}

// write makes a request of the test itself, with faults off (a read in a
// RunUntil condition must not wait for injected latency: the clock does
// not move while the condition runs), and fails the test if it fails.
func (w *world) write(what string, f func(ctx context.Context) error) {
	w.tb.Helper()
	if err := w.try(f); err != nil {
		w.tb.Fatalf("%s: %v %+v", what, err, apierrors.ReasonForError(err))
	}
}

// try makes a request of the test itself with faults off, as write does,
// and returns its error.
func (w *world) try(f func(ctx context.Context) error) error {
	w.c.SetFaults(memcluster.Faults{})
	defer w.c.SetFaults(w.faults)
	return f(w.ctx)
}

// now is the virtual time elapsed since the start.
func (w *world) now() time.Duration { return w.fc.Now().Sub(epoch) }

// runUntil runs the simulation until cond holds, for at most limit of
// virtual time, and fails the test otherwise.
func (w *world) runUntil(what string, limit time.Duration, cond func() bool) {
	w.tb.Helper()
	if err := w.run(cond, limit); err != nil {
		if errors.Is(err, clock.ErrStalled) {
			w.checkLiveness()
		}
		w.tb.Fatalf("at +%v, waiting until %s: %v\n%s%s", w.now(), what, err, w.rec.describe(), w.diagnose())
	}
}

// run is [memcluster.Cluster.RunUntil]: virtual time is exact, so a
// stall it reports is real.
func (w *world) run(cond func() bool, limit time.Duration) error {
	return w.c.RunUntil(w.ctx, cond, limit)
}

// runFor lets the simulation run for d of virtual time (less if nothing
// at all is pending).
func (w *world) runFor(d time.Duration) {
	w.tb.Helper()
	until := w.fc.Now().Add(d)
	// Stalling is expected here (nothing left to do), but not with work
	// left (checkLiveness).
	err := w.c.RunUntil(w.ctx, func() bool { return !w.fc.Now().Before(until) }, d)
	switch {
	case errors.Is(err, clock.ErrStalled):
		w.checkLiveness()
	case err != nil && !errors.Is(err, clock.ErrTimeLimit):
		w.tb.Fatal(err)
	}
}

// converge runs until every Deployment is rolled out and stable.
func (w *world) converge(limit time.Duration) {
	w.tb.Helper()
	w.runUntil("every Deployment converges", limit, func() bool {
		if w.rec.problem() != "" {
			return false
		}
		// The recorder may be an event behind the cluster: confirm.
		var live *state
		w.write("list the cluster", func(ctx context.Context) (err error) {
			live, err = liveState(ctx, w.c)
			return err
		})
		return live.problem() == ""
	})
}

// deployment is a Deployment of replicas pods of image, rolling 25%/25%.
func newDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

// withRolling sets a RollingUpdate strategy.
func withRolling(d *appsv1.Deployment, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
	return d
}

func (w *world) create(d *appsv1.Deployment) {
	w.tb.Helper()
	w.write("create deployment "+d.Name, func(ctx context.Context) error {
		_, err := w.c.Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
}

func (w *world) get(name string) *appsv1.Deployment {
	w.tb.Helper()
	var d *appsv1.Deployment
	w.write("get deployment "+name, func(ctx context.Context) (err error) {
		d, err = w.c.Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	return d
}

// patch sends a strategic merge patch to a Deployment.
func (w *world) patch(name, patch string) {
	w.tb.Helper()
	w.patchAs(name, types.StrategicMergePatchType, []byte(patch))
}

func (w *world) patchAs(name string, pt types.PatchType, patch []byte) {
	w.tb.Helper()
	w.write("patch deployment "+name, func(ctx context.Context) error {
		_, err := w.c.Deployments(ns).Patch(ctx, name, pt, patch, metav1.PatchOptions{})
		return err
	})
}

// updateAttempts bounds update's retries on Conflict, as client-go's
// retry.DefaultRetry does (5 steps).
const updateAttempts = 5

// update is a user's read-modify-write of Deployment name: get it, apply
// change, and send a full Update with the resourceVersion read. The
// controllers write the Deployment (its status) meanwhile, so the Update
// may fail with Conflict; like client-go's retry.RetryOnConflict, update
// then re-reads and re-applies change, up to updateAttempts times, and
// fails the test on any other error. change may run more than once: it
// must not draw random numbers (decide the change before calling update,
// so that a seeded run replays the same draws however often it retries).
func (w *world) update(what, name string, change func(d *appsv1.Deployment)) {
	w.tb.Helper()
	for attempt := 1; ; attempt++ {
		d := w.get(name)
		change(d)
		err := w.try(func(ctx context.Context) error {
			_, err := w.c.Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
			return err
		})
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || attempt == updateAttempts {
			w.tb.Fatalf("%s (attempt %d of %d): %v %+v", what, attempt, updateAttempts, err, apierrors.ReasonForError(err))
		}
		w.tb.Logf("+%v %s: conflict, retrying: %v", w.now(), what, err)
		// The virtual clock stands still here: let the controllers'
		// writes of this instant land before reading again.
		if err := w.c.Settle(w.ctx); err != nil {
			w.tb.Fatal(err)
		}
	}
}

func (w *world) setImage(name, image string) {
	w.tb.Helper()
	w.patch(name, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, image))
}

func (w *world) scale(name string, replicas int32) {
	w.tb.Helper()
	w.patch(name, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
}
