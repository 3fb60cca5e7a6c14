//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/kube/plugin"
	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// whyCase is one stuck (or healthy) rollout reproduced on the real
// apiserver, with the causes `kubectl ctrlkit why` must name.
type whyCase struct {
	name string
	// base changes the Deployment web (3 replicas of app:1, 25%/25%)
	// before it is created.
	base func(*appsv1.Deployment)
	// setup makes the rollout stuck once app:1 is rolled out; nil
	// updates the image to app:2.
	setup func(e *env)
	// faults gives the pods of an image their fault.
	faults map[string]simkubelet.Fault
	args   []string
	want   []plugin.CauseCode
	state  plugin.RolloutState
	// show adds why's text output to the report.
	show bool
	// binary runs the ctrlkit-controller binary (leader-elected, for the
	// test's namespace) instead of the in-process operator.
	binary bool
	// check, if set, makes more assertions on the report and its text.
	check func(t *testing.T, e *env, r plugin.WhyReport, text string)
	// each, if set, checks every report why gives while the runner waits
	// for the expected one.
	each func(t *testing.T, r plugin.WhyReport)
	// upstream runs the case with kube-controller-manager's Deployment
	// and ReplicaSet controllers too (TestWhyUpstream).
	upstream bool
}

// contains is a check that the text output holds every string of want.
func contains(want ...string) func(*testing.T, *env, plugin.WhyReport, string) {
	return func(t *testing.T, e *env, _ plugin.WhyReport, text string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(text, strings.ReplaceAll(w, "NS", e.ns)) {
				t.Errorf("why's output lacks %q:\n%s", w, text)
			}
		}
	}
}

func toApp2(e *env) { e.update("web", setImage("app:2")) }

func setImage(img string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = img }
}

func whyCases() []whyCase {
	c := func(name string, f simkubelet.Fault, want ...plugin.CauseCode) whyCase {
		return whyCase{name: name, faults: map[string]simkubelet.Fault{"app:2": f}, want: want, state: plugin.Stuck}
	}
	withBase := func(wc whyCase, base func(*appsv1.Deployment)) whyCase { wc.base = base; return wc }
	withSetup := func(wc whyCase, setup func(*env)) whyCase { wc.setup = setup; return wc }
	withShow := func(wc whyCase) whyCase { wc.show = true; return wc }
	withCheck := func(wc whyCase, check func(*testing.T, *env, plugin.WhyReport, string)) whyCase {
		wc.check = check
		return wc
	}
	strategy := func(surge, unavail int) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) { rolling(d, intstr.FromInt(surge), intstr.FromInt(unavail)) }
	}
	recreate := func(d *appsv1.Deployment) {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	return []whyCase{
		c("bad image", simkubelet.ImagePull, plugin.ImagePullBackOff),
		c("invalid image name", simkubelet.InvalidImage, plugin.ImagePullBackOff),
		c("crash loop", simkubelet.CrashLoop, plugin.CrashLoopBackOff),
		c("OOM-killed crash loop", simkubelet.OOMKilled, plugin.CrashLoopBackOff),
		withBase(c("init container crash loop", simkubelet.InitCrashLoop, plugin.CrashLoopBackOff), func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1"}}
		}),
		c("missing ConfigMap", simkubelet.ConfigError, plugin.ContainerConfigError),
		c("unschedulable", simkubelet.Unschedulable, plugin.Unschedulable),
		c("failing readiness", simkubelet.ReadinessFails, plugin.ReadinessFailing),
		withSetup(c("quota exceeded", simkubelet.Healthy, plugin.QuotaExceeded), func(e *env) {
			e.quota(3) // the 3 running pods fill it: no surge pod fits
			toApp2(e)
		}),
		withSetup(c("admission rejected (LimitRange)", simkubelet.Healthy, plugin.AdmissionRejected), func(e *env) {
			e.limitRange("1")
			e.update("web", func(d *appsv1.Deployment) {
				setImage("app:2")(d)
				cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
				d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: cpu, Limits: cpu}
			})
		}),
		withSetup(c("paused", simkubelet.Healthy, plugin.Paused), func(e *env) {
			e.patch("web", pausePatch)
			toApp2(e)
		}),
		withBase(c("progress deadline exceeded", simkubelet.ImagePull, plugin.DeadlineExceeded, plugin.ImagePullBackOff), func(d *appsv1.Deployment) {
			d.Spec.ProgressDeadlineSeconds = new(int32(2))
		}),
		withShow(withBase(c("bad image, 10 replicas, deadline 5s", simkubelet.ImagePull, plugin.DeadlineExceeded, plugin.ImagePullBackOff), func(d *appsv1.Deployment) {
			d.Spec.Replicas = new(int32(10))
			d.Spec.ProgressDeadlineSeconds = new(int32(5))
		})),
		withBase(c("maxUnavailable 0, failing new pod", simkubelet.CrashLoop, plugin.CrashLoopBackOff), strategy(1, 0)),
		withBase(c("maxSurge 0, bad image", simkubelet.ImagePull, plugin.ImagePullBackOff), strategy(0, 1)),
		withBase(c("Recreate, bad image", simkubelet.ImagePull, plugin.ImagePullBackOff), recreate),
		withSetup(withBase(c("Recreate, terminating pod that never goes", simkubelet.Healthy, plugin.StuckTerminating), recreate), func(e *env) {
			e.holdOnePod()
			toApp2(e)
		}),
		withSetup(c("PodDisruptionBudget, failing readiness", simkubelet.ReadinessFails, plugin.ReadinessFailing, plugin.DisruptionBudget), func(e *env) {
			e.pdb(3)
			toApp2(e)
		}),
		withSetup(c("selector overlap", simkubelet.ImagePull, plugin.ImagePullBackOff, plugin.SelectorOverlap), func(e *env) {
			// The canary's pods are app=web too: web's selector matches them.
			canary := deployment("web-canary", 1, "app:1")
			canary.Spec.Selector.MatchLabels = map[string]string{"app": "web", "track": "canary"}
			canary.Spec.Template.Labels = map[string]string{"app": "web", "track": "canary"}
			e.create(canary)
			toApp2(e)
		}),
		withSetup(c("orphaned ReplicaSet", simkubelet.CrashLoop, plugin.CrashLoopBackOff, plugin.OrphanedReplicaSet), func(e *env) {
			e.orphan()
			toApp2(e)
		}),
		withSetup(c("hash collision", simkubelet.ImagePull, plugin.ImagePullBackOff, plugin.HashCollision), func(e *env) {
			e.squat()
		}),
		withSetup(c("scaled up into a full quota", simkubelet.Healthy, plugin.QuotaExceeded), func(e *env) {
			e.quota(4)
			e.update("web", func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(6)) })
		}),
		// Issue 31: what why called healthy, and more a user meets.
		{name: "controller not running", binary: true, show: true, state: plugin.Stuck, want: []plugin.CauseCode{plugin.ControllerNotObserving},
			// Longer than the 4s lease, which the killed leader renewed
			// before the change at the latest: it has expired by then.
			args: []string{"--unobserved-after", "6s"},
			setup: func(e *env) {
				e.ctrl.kill(e.t) // SIGKILL: the Lease is left to expire
				toApp2(e)
			},
			check: func(t *testing.T, e *env, r plugin.WhyReport, text string) {
				contains("no Deployment controller has acted on generation 2 for", "(status.observedGeneration is 1)",
					"lease NS/ctrlkit-controller: held by ", "lease expired", "kubectl -n NS get lease ctrlkit-controller -o wide")(t, e, r, text)
				code, out, errOut := kubectlCtrlkit(t, "plan", "deploy/web", "-n", e.ns, "--unobserved-after", "6s")
				if code != plugin.ExitStuck || !strings.Contains(out, "predicted: does NOT complete as things stand: no controller has acted on the deployment for ") {
					t.Errorf("plan: exit %d; want 1 and no completion predicted\n%s%s", code, out, errOut)
				}
			}},
		{name: "being deleted, held by a finalizer", state: plugin.Deleting, want: []plugin.CauseCode{plugin.BeingDeleted},
			setup: func(e *env) {
				e.deleteHeld("web")
				toApp2(e) // the controller does not roll out a Deployment being deleted
			},
			check: func(t *testing.T, e *env, r plugin.WhyReport, text string) {
				contains("deployment/web in NS: BEING DELETED", "held by finalizers e2e.ctrlkit.io/hold",
					"background deletion: once the deployment is gone the garbage collector deletes its 1 ReplicaSet and their 3 pods",
					"BeingDeleted: deployment is being deleted")(t, e, r, text)
				if strings.Contains(text, "ControllerPending") {
					t.Errorf("a Deployment being deleted awaits no rollout step:\n%s", text)
				}
			}},
		{name: "spec fight: an HPA against Argo CD", state: plugin.Stuck, want: []plugin.CauseCode{plugin.SpecFight},
			setup: func(e *env) { e.fight(3, 6) },
			// The fight deletes three pods every 3 s: why's default
			// threshold for them (the cases' 1 s would count a loaded
			// machine's kubelet, 2 s behind, as pods stuck terminating).
			args: []string{"--terminating-after", "10s"},
			check: contains("spec.replicas keeps changing: ", "two writers disagree: HorizontalPodAutoscaler web (replicas 1–6, wants 6)",
				"argocd-application-controller (Argo CD, GitOps)", "let the HorizontalPodAutoscaler alone own spec.replicas")},
		withSetup(withCheck(c("admission webhook down", simkubelet.Healthy, plugin.FailedCreate),
			contains("an admission webhook cannot be called", "failed calling webhook", "To unblock:", "failurePolicy: Ignore")), func(e *env) {
			e.deadWebhook()
			toApp2(e)
		}),
		withSetup(withCheck(c("admission policy rejects the new image", simkubelet.Healthy, plugin.AdmissionRejected),
			contains("ValidatingAdmissionPolicy", "denied request", "To unblock:")), func(e *env) {
			e.denyImage("app:2")
			toApp2(e)
		}),
		withSetup(withCheck(c("ServiceAccount missing", simkubelet.Healthy, plugin.AdmissionRejected),
			contains("name ServiceAccount app, which does not exist", "kubectl create serviceaccount app -n NS")), func(e *env) {
			e.update("web", func(d *appsv1.Deployment) {
				setImage("app:2")(d)
				d.Spec.Template.Spec.ServiceAccountName = "app"
			})
		}),
		withSetup(withCheck(c("image pull secret missing", simkubelet.Healthy, plugin.ImagePullBackOff),
			contains(`cannot pull image "registry.example.com/app:2": an image pull secret is missing`, "Unable to retrieve some image pull secrets (regcred)",
				"create the missing image pull secret")), func(e *env) {
			e.update("web", func(d *appsv1.Deployment) {
				setImage("registry.example.com/app:2")(d)
				d.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
			})
		}),
		withSetup(withCheck(c("kubelet rejects the new pods (OutOfcpu)", simkubelet.OutOfCPU, plugin.KubeletRejected),
			contains("rejected by the kubelet (OutOfcpu)", "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000", "the node lacks cpu")), func(e *env) {
			e.update("web", func(d *appsv1.Deployment) {
				setImage("app:2")(d)
				cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
				d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: cpu}
			})
		}),
		withSetup(withCheck(c("quota on the number of ReplicaSets", simkubelet.Healthy, plugin.QuotaExceeded),
			contains("a ResourceQuota on the number of ReplicaSets (count/replicasets.apps) rejects the new ReplicaSet", "lower spec.revisionHistoryLimit")), func(e *env) {
			e.countQuota("count/replicasets.apps", 1)
			toApp2(e)
		}),
		{name: "HPA at its max", state: plugin.Complete, want: []plugin.CauseCode{plugin.AutoscalerLimited},
			setup: func(e *env) { e.hpaAtMax(3) },
			check: contains("HorizontalPodAutoscaler web is at its maximum of 3 replicas and wants more: cpu 180% of requests (target 50%)")},
		{name: "PodDisruptionBudget blocks a node drain", state: plugin.Complete, want: []plugin.CauseCode{plugin.DisruptionBudget},
			setup: func(e *env) {
				e.pdb(3)
				e.drainRefused()
			},
			check: contains("PodDisruptionBudget web allows 0 disruptions (3 healthy, 3 required)", "its status says 0 allowed")},
		// Issue 40: slowed is not stuck, a fight that ended, the right
		// writers; with kube-controller-manager's controllers too.
		{name: "quota slows the rollout, does not block it", upstream: true, state: plugin.Progressing, want: []plugin.CauseCode{plugin.QuotaExceeded},
			// 4 pods for 3 replicas at 2/0: a surge pod is refused, and
			// each old pod that goes makes room for a new one. The
			// ReplicaSet controller retries a refused creation after a
			// backoff that doubles with each failed sync: the rollout
			// spends most of its time waiting, refused, which why sees.
			base: strategy(2, 0),
			setup: func(e *env) {
				e.quota(4)
				e.planFitsQuota(4)
				toApp2(e)
			},
			each: func(t *testing.T, r plugin.WhyReport) {
				if r.State == plugin.Stuck {
					t.Errorf("why said STUCK while the quota only slows the rollout: %+v", r.Causes)
				}
			},
			check: func(t *testing.T, e *env, r plugin.WhyReport, text string) {
				c := causeOf(r, plugin.QuotaExceeded)
				if c.Severity != plugin.Warning || !strings.Contains(c.Message, "but it only slows the rollout") || !slices.Equal(r.SlowedBy, []plugin.CauseCode{plugin.QuotaExceeded}) ||
					r.Estimate == nil || !r.Estimate.Complete {
					t.Errorf("not reported as slowed by the quota: slowedBy %v, estimate %+v, %+v", r.SlowedBy, r.Estimate, c)
				}
				start, planned := time.Now(), "none"
				if r.Estimate != nil {
					planned = r.Estimate.Remaining.String()
				}
				e.waitComplete("web", 4*time.Minute) // on its own
				report(t, fmt.Sprintf("quota slows the rollout (%s): complete %s after why said so (its estimate: %s)\n", e.side,
					time.Since(start).Round(100*time.Millisecond), planned))
			}},
		{name: "spec fight that ended", upstream: true, show: true, state: plugin.Complete, want: []plugin.CauseCode{plugin.SpecFight},
			setup: func(e *env) {
				stop := e.fight(3, 6)
				if code, r := e.waitWhy("web", []plugin.CauseCode{plugin.SpecFight}, plugin.Stuck, 45*time.Second); r.State != plugin.Stuck || code != plugin.ExitStuck {
					e.t.Fatalf("the fight was not seen: exit %d, %s %v", code, r.State, codesOf(r.Causes))
				}
				e.fightStopped = stop()
			},
			check: func(t *testing.T, e *env, r plugin.WhyReport, text string) {
				c := causeOf(r, plugin.SpecFight)
				if c.Severity != plugin.Warning || !strings.Contains(c.Message, "the fight is over") || !strings.Contains(c.Message, "s ago: unchanged since") {
					t.Errorf("an ended fight: %+v", c)
				}
				report(t, fmt.Sprintf("spec fight that ended (%s): not stuck any more %s after its last write\n", e.side, time.Since(e.fightStopped).Round(100*time.Millisecond)))
			}},
		{name: "spec fight between two scripts: both named", upstream: true, show: true, state: plugin.Stuck, want: []plugin.CauseCode{plugin.SpecFight},
			setup: func(e *env) {
				// kubectl set image owns the template; two scripts then
				// take turns on spec.replicas, one through /scale: each
				// takes the field from the other, whose managedFields
				// entry goes.
				e.updateAs("kubectl-set", "web", setImage("app:2"))
				e.waitComplete("web", 30*time.Second)
				e.fightWith(e.updateWriter("scale-to-3", 3, nil), e.scaleWriter("scale-to-6", 6))
			},
			check: func(t *testing.T, e *env, r plugin.WhyReport, text string) {
				both := func(r plugin.WhyReport) bool {
					m := causeOf(r, plugin.SpecFight).Message
					return strings.Contains(m, "scale-to-3 (a second controller or a script)") && strings.Contains(m, "scale-to-6 (/scale) (a second controller or a script)")
				}
				deadline := time.Now().Add(30 * time.Second)
				for !both(r) && time.Now().Before(deadline) { // a writer's Update may lose a round to a conflict: look again
					_, r = e.why("web")
				}
				m := causeOf(r, plugin.SpecFight).Message
				if !both(r) || strings.Contains(m, "kubectl-set (") {
					t.Errorf("the writers of spec.replicas are scale-to-3 and scale-to-6, not kubectl-set: %s", m)
				}
				if !slices.ContainsFunc(e.get("web").ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == "kubectl-set" }) {
					t.Errorf("kubectl-set is not in the managedFields: the case does not test what it says")
				}
			}},
		// Controls: nothing is wrong, why must say so (precision).
		{name: "control: slow healthy rollout (minReadySeconds 30)", state: plugin.Progressing,
			setup: func(e *env) {
				e.update("web", func(d *appsv1.Deployment) {
					setImage("app:2")(d)
					d.Spec.MinReadySeconds = 30
				})
			},
			check: func(t *testing.T, e *env, r plugin.WhyReport, text string) {
				if r.Estimate == nil || !r.Estimate.Complete || r.Estimate.Remaining <= 0 || !strings.Contains(text, "Estimate: completes in about ") {
					t.Errorf("no estimate of the completion: %+v\n%s", r.Estimate, text)
				}
			}},
		{name: "control: complete", setup: func(*env) {}, state: plugin.Complete},
		{name: "control: scaled up, complete", setup: func(e *env) {
			e.update("web", func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(4)) })
			e.waitComplete("web", 30*time.Second)
		}, state: plugin.Complete},
	}
}

// testName keeps letters, digits and dashes, so that the namespace
// derived from the test's name is valid.
func testName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		case r == ' ' || r == '-':
			return '-'
		}
		return -1
	}, s)
}

func codesOf(cs []plugin.Cause) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Code))
	}
	return out
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// report logs s and appends it to CTRLKIT_E2E_REPORT if set.
func report(t *testing.T, s string) {
	t.Log("\n" + s)
	if path := os.Getenv("CTRLKIT_E2E_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := f.WriteString(s); err != nil {
			t.Error(err)
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// quota creates a ResourceQuota of n pods and waits for the quota
// controller to count the pods there are: admission enforces it then.
func (e *env) quota(n int64) {
	e.t.Helper()
	e.resourceQuota("pods", corev1.ResourcePods, n)
}

// resourceQuota creates a ResourceQuota name of n res and waits until
// kube-controller-manager's quota controller has computed its usage
// (until then admission refuses what it limits: "status unknown").
func (e *env) resourceQuota(name string, res corev1.ResourceName, n int64) {
	e.t.Helper()
	hard := corev1.ResourceList{res: *resource.NewQuantity(n, resource.DecimalSI)}
	if _, err := e.cs.CoreV1().ResourceQuotas(e.ns).Create(e.ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		q, err := e.cs.CoreV1().ResourceQuotas(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		if _, ok := q.Status.Used[res]; ok {
			e.t.Logf("quota %s: used %v of %v", name, q.Status.Used, q.Status.Hard)
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the quota controller did not compute quota %s: %+v", name, q.Status)
		}
		time.Sleep(100 * time.Millisecond) // a poll of the controller's status
	}
}

// limitRange caps containers at maxCPU.
func (e *env) limitRange(maxCPU string) {
	e.t.Helper()
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(maxCPU)}}}}}
	if _, err := e.cs.CoreV1().LimitRanges(e.ns).Create(e.ctx, lr, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// pdb protects web's pods with minAvailable n.
func (e *env) pdb(n int) {
	e.t.Helper()
	min := intstr.FromInt(n)
	p := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// holdOnePod puts a finalizer on one of web's pods, so that once deleted
// it stays terminating (released at cleanup).
func (e *env) holdOnePod() {
	e.t.Helper()
	p := e.pods()[0]
	patch := []byte(`{"metadata":{"finalizers":["e2e.ctrlkit.io/hold"]}}`)
	if _, err := e.cs.CoreV1().Pods(e.ns).Patch(e.ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { e.release("pods", p.Name) })
}

// release removes the finalizers of a held object.
func (e *env) release(resource, name string) {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	var err error
	switch resource {
	case "pods":
		_, err = e.cs.CoreV1().Pods(e.ns).Patch(e.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	case "deployments":
		_, err = e.cs.AppsV1().Deployments(e.ns).Patch(e.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	default:
		_, err = e.cs.AppsV1().ReplicaSets(e.ns).Patch(e.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err := ignoreNotFound(err); err != nil {
		e.t.Log(err)
	}
}

// orphan leaves a ReplicaSet that matches web's selector, owned by
// nothing, and being deleted (held by a finalizer), so that no
// controller adopts it: it is created with labels web does not select,
// deleted, then labelled app=web.
func (e *env) orphan() {
	e.t.Helper()
	lbl := map[string]string{"app": "legacy", "pod-template-hash": "orphan"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-orphan", Labels: lbl, Finalizers: []string{"e2e.ctrlkit.io/hold"}},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:0"}}}}}}
	rss := e.cs.AppsV1().ReplicaSets(e.ns)
	if _, err := rss.Create(e.ctx, rs, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { e.release("replicasets", rs.Name) })
	if err := rss.Delete(e.ctx, rs.Name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"app":"web"}}}`)
	if _, err := rss.Patch(e.ctx, rs.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// squat makes the name the controller computes for app:2's template
// taken: web is paused, moved to app:2 (no ReplicaSet is created while
// paused), a ReplicaSet of another template, with labels the selector
// does not match, is created under that name, and web is resumed: a hash
// collision.
func (e *env) squat() {
	e.t.Helper()
	e.patch("web", pausePatch)
	e.update("web", setImage("app:2"))
	d := e.get("web")
	name := rollout.ReplicaSetName(d.Name, rollout.ComputeHash(&d.Spec.Template, d.Status.CollisionCount))
	lbl := map[string]string{"app": "squatter"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "squatter:1"}}}}}}
	if _, err := e.cs.AppsV1().ReplicaSets(e.ns).Create(e.ctx, rs, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Logf("squatter %s created", name)
	e.patch("web", resumePatch)
}
