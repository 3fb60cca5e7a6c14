//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// env is one test's namespace, with our controllers and a kubelet running
// in it, and a recorder of what happens there.
type env struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	cs      kubernetes.Interface // the test's own client (plays user and kubelet)
	rec     *cluster.Recorder
	metrics *kube.Metrics // our controllers' counters
	kubelet *simkubelet.Kubelet
	// faults is the FaultKubelet, when envOptions.faults chose it.
	faults *simkubelet.FaultKubelet
	// gens holds the generation of each Deployment's last write by the
	// test: waits ignore older states still in the watch pipeline.
	gens map[string]int64
	// ctrl is the ctrlkit-controller process a test started, if any.
	ctrl *instance
	// cp is the control plane the namespace is on.
	cp *cluster.ControlPlane
	// fightStopped is when a case's fight made its last write.
	fightStopped time.Time
	// side names whose controllers run, for reports.
	side string
}

type envOptions struct {
	readyDelay time.Duration
	neverReady func(*corev1.Pod) bool
	noOperator bool
	// noKubelet runs no kubelet (the test brings its own).
	noKubelet bool
	// lowPriorityEvents sets the operator's LowPriorityEvents.
	lowPriorityEvents bool
	// faults, if set, runs a simkubelet.FaultKubelet (pods bound to
	// nodes, graceful deletion, faults as a kubelet reports them) instead
	// of the plain Kubelet; neverReady is then unused.
	faults func(*corev1.Pod) simkubelet.Fault
	// cp, if set, is the control plane to use instead of the package's
	// (one where kube-controller-manager runs the Deployment and
	// ReplicaSet controllers: then set noOperator too).
	cp *cluster.ControlPlane
	// logger, if set, receives the operator's logs.
	logger logr.Logger
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	plane := cp
	if o.cp != nil {
		plane = o.cp
	}
	cs := kubernetes.NewForConfigOrDie(plane.Config(100, 200))
	ns := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	ns = fmt.Sprintf("%.50s-%d", ns, time.Now().UnixNano()%100000)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// ServiceAccount admission needs it; the harness would create it
	// soon, this makes it there before the first pod.
	if err := cluster.EnsureServiceAccount(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, ns: ns, cs: cs, metrics: mustMetrics(t), gens: map[string]int64{}, cp: plane, side: "ctrlkit"}
	if o.cp != nil && o.noOperator {
		e.side = "kube-controller-manager"
	}
	var wg sync.WaitGroup
	e.rec = &cluster.Recorder{Client: cs, Namespace: ns}
	ready := make(chan struct{})
	wg.Go(func() { e.rec.Run(ctx, ready) })
	<-ready
	if o.readyDelay == 0 {
		o.readyDelay = 500 * time.Millisecond
	}
	switch {
	case o.noKubelet:
	case o.faults != nil:
		e.faults = &simkubelet.FaultKubelet{Client: cs, Namespace: ns, ReadyDelay: o.readyDelay, Fault: o.faults}
		wg.Go(func() { _ = e.faults.Run(ctx) })
	default:
		e.kubelet = &simkubelet.Kubelet{Client: cs, Namespace: ns, ReadyDelay: o.readyDelay, NeverReady: o.neverReady}
		wg.Go(func() { _ = e.kubelet.Run(ctx) })
	}
	if !o.noOperator {
		e.startOperator(ctx, &wg, o.lowPriorityEvents, o.logger)
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			for _, en := range e.rec.Entries() {
				t.Log(en)
			}
		}
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return e
}

func (e *env) startOperator(ctx context.Context, wg *sync.WaitGroup, lowPriorityEvents bool, log logr.Logger) {
	op := &kube.Operator{Config: e.cp.Config(20, 30), Namespace: e.ns, Metrics: e.metrics, LowPriorityEvents: lowPriorityEvents, Logger: log}
	wg.Go(func() {
		if err := op.Run(ctx); err != nil {
			e.t.Errorf("operator: %v", err)
		}
	})
}

// deployment returns a Deployment named name of n replicas with image img.
func deployment(name string, n int32, img string) *appsv1.Deployment {
	lbl := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img}}},
			},
		},
	}
}

func rolling(d *appsv1.Deployment, surge, unavail intstr.IntOrString) *appsv1.Deployment {
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}}
	return d
}

func (e *env) create(d *appsv1.Deployment) *appsv1.Deployment {
	e.t.Helper()
	got, err := e.cs.AppsV1().Deployments(e.ns).Create(e.ctx, d, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.gens[got.Name] = got.Generation
	return got
}

// update changes the Deployment name with f, retrying on Conflict.
func (e *env) update(name string, f func(*appsv1.Deployment)) {
	e.t.Helper()
	e.updateAs("", name, f)
}

// updateAs is update as the field manager manager ("": the client's).
func (e *env) updateAs(manager, name string, f func(*appsv1.Deployment)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := e.cs.AppsV1().Deployments(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		f(d)
		d, err = e.cs.AppsV1().Deployments(e.ns).Update(e.ctx, d, metav1.UpdateOptions{FieldManager: manager})
		if err == nil {
			e.gens[name] = d.Generation
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// waitComplete waits until the Deployment name has rolled out completely
// and returns when it was first seen so.
func (e *env) waitComplete(name string, timeout time.Duration) time.Time {
	e.t.Helper()
	at, err := e.rec.WaitFor(e.ctx, timeout, func(s cluster.Snapshot) bool {
		d := s.Deployments[name]
		return d != nil && d.Generation >= e.gens[name] && cluster.Complete(d)
	})
	if err != nil {
		e.t.Fatalf("deploy/%s did not complete: %v", name, err)
	}
	return at
}

func (e *env) waitFor(what string, timeout time.Duration, cond func(cluster.Snapshot) bool) time.Time {
	e.t.Helper()
	at, err := e.rec.WaitFor(e.ctx, timeout, cond)
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
	return at
}

func (e *env) get(name string) *appsv1.Deployment {
	e.t.Helper()
	d, err := e.cs.AppsV1().Deployments(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) replicaSets() []appsv1.ReplicaSet {
	e.t.Helper()
	l, err := e.cs.AppsV1().ReplicaSets(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

func (e *env) pods() []corev1.Pod {
	e.t.Helper()
	l, err := e.cs.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

// activeRS returns the ReplicaSets with a positive spec.replicas.
func activeRS(s cluster.Snapshot) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range s.ReplicaSets {
		if rs.Spec.Replicas != nil && *rs.Spec.Replicas > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// mustMetrics returns fresh operator metrics on a registry of their own.
func mustMetrics(t *testing.T) *kube.Metrics {
	t.Helper()
	m, err := kube.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
