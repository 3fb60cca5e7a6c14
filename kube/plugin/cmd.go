package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/planner"
)

// The exit codes of kubectl-ctrlkit.
const (
	// ExitOK: the rollout is complete or progressing (why), the plan
	// completes (plan), or the command succeeded (history).
	ExitOK = 0
	// ExitStuck: the rollout is stuck (why) or the plan stalls (plan).
	ExitStuck = 1
	// ExitError: bad usage, a missing object, no permission, an
	// unreachable server.
	ExitError = 2
)

// Env is what Execute needs from the outside world.
type Env struct {
	Streams genericiooptions.IOStreams
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Client, if set, replaces the clientset built from the kubeconfig
	// flags (tests pass a fake one); Namespace is then the default
	// namespace.
	Client    kubernetes.Interface
	Namespace string
}

// Execute runs kubectl-ctrlkit with args (without the program name) and
// returns its exit code.
func Execute(ctx context.Context, args []string, env Env) int {
	if env.Now == nil {
		env.Now = time.Now
	}
	code := ExitOK
	root := newRoot(ctx, &env, &code)
	root.SetArgs(args)
	root.SetIn(env.Streams.In)
	root.SetOut(env.Streams.Out)
	root.SetErr(env.Streams.ErrOut)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(env.Streams.ErrOut, "error: %v\n", err)
		return ExitError
	}
	return code
}

func newRoot(ctx context.Context, env *Env, code *int) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	var output string
	root := &cobra.Command{
		Use:         "kubectl-ctrlkit",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl ctrlkit"},
		Short:       "Why is my rollout stuck, what will it do, what changed",
		Long: `kubectl ctrlkit explains and predicts Deployment rollouts with the Deployment
controller's own rules (the ctrlkit library).

Exit codes: 0 complete/healthy (why), completes (plan), ok (history);
1 stuck or being deleted (why), stalls or no controller acts (plan); 2 error.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: text)")
	var leases []string

	var observe time.Duration
	load := func(cmd *cobra.Command, args []string) (*State, Format, error) {
		f, err := ParseFormat(output)
		if err != nil {
			return nil, "", err
		}
		name, err := deploymentName(args)
		if err != nil {
			return nil, "", err
		}
		cs, ns, err := client(env, flags)
		if err != nil {
			return nil, "", err
		}
		st, err := FetchWith(cmd.Context(), cs, ns, name, FetchOptions{Leases: leases, Observe: observe, Now: env.Now})
		return st, f, err
	}

	var th Thresholds
	why := &cobra.Command{
		Use:   "why deploy/NAME",
		Short: "Say why a Deployment's rollout is stuck, and what would unblock it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, f, err := load(cmd, args)
			if err != nil {
				return err
			}
			r := Why(st, env.Now(), th)
			*code = r.ExitCode()
			return Write(env.Streams.Out, f, r)
		},
	}
	why.Flags().DurationVar(&th.NotReady, "not-ready-after", 5*time.Minute, "a running pod not ready this long, with no probe failure event, counts as failing readiness")
	why.Flags().DurationVar(&th.Terminating, "terminating-after", 10*time.Second, "a pod this long past its grace period counts as stuck terminating")
	why.Flags().DurationVar(&th.Unscheduled, "unscheduled-after", time.Minute, "a pod without a node or a scheduler verdict this long counts as unschedulable")
	why.Flags().DurationVar(&th.Unobserved, "unobserved-after", DefaultUnobserved, "a generation no controller has acted on for this long means the controller is not running or not keeping up")
	why.Flags().DurationVar(&observe, "observe", DefaultObserve, "while spec.replicas flips back and forth, watch the deployment up to this long (three flip periods at most) to name every writer; 0: do not")
	why.Flags().StringArrayVar(&leases, "controller-lease", nil, "a leader-election Lease (namespace/name) of the controller that runs Deployments, read when it lags behind; repeatable\n"+
		"(default "+strings.Join(DefaultLeases, ", ")+")")

	var images []string
	var file string
	var popts PlanOptions
	plan := &cobra.Command{
		Use:   "plan deploy/NAME [--image [CONTAINER=]IMAGE ... | -f changed.yaml]",
		Short: "Predict a rollout from the live state: timeline, peak pods, minimum available, time to complete",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var w WhatIf
			if len(images) > 0 && file != "" {
				return errors.New("--image and -f exclude each other")
			}
			if len(images) > 0 {
				w.Images = map[string]string{}
				for _, s := range images {
					name, img, ok := strings.Cut(s, "=")
					if !ok {
						name, img = "", s
					}
					if img == "" {
						return fmt.Errorf("--image %q: empty image", s)
					}
					w.Images[name] = img
				}
			}
			st, f, err := load(cmd, args)
			if err != nil {
				return err
			}
			if file != "" {
				spec, err := readSpec(file, st.Deployment.Name)
				if err != nil {
					return err
				}
				w.Spec = spec
			}
			r, err := PlanLive(st, w, env.Now(), popts)
			if err != nil {
				return err
			}
			*code = r.ExitCode()
			return Write(env.Streams.Out, f, r)
		},
	}
	plan.Flags().StringArrayVar(&images, "image", nil, "what-if: set a container's image ([CONTAINER=]IMAGE, repeatable)")
	plan.Flags().StringVarP(&file, "filename", "f", "", "what-if: the changed Deployment manifest (YAML or JSON)")
	plan.Flags().Uint64Var(&popts.Seed, "seed", 1, "seed of the pod model's draws (same seed, same plan)")
	plan.Flags().DurationVar(&popts.Horizon, "horizon", time.Hour, "simulated time limit")
	plan.Flags().DurationVar(&popts.Shutdown, "shutdown", 0, "how long a deleted pod takes to stop (default: its terminationGracePeriodSeconds)")
	plan.Flags().DurationVar(&popts.Unobserved, "unobserved-after", DefaultUnobserved, "a generation no controller has acted on for this long: the plan does not complete as things stand")

	history := &cobra.Command{
		Use:   "history deploy/NAME",
		Short: "List the revisions and what changed in the pod template from one to the next",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, f, err := load(cmd, args)
			if err != nil {
				return err
			}
			r, err := History(st)
			if err != nil {
				return err
			}
			return Write(env.Streams.Out, f, r)
		},
	}
	root.AddCommand(why, plan, history)
	return root
}

// deploymentName accepts deploy/NAME, deployment/NAME,
// deployments/NAME, deployment.apps/NAME or NAME.
func deploymentName(args []string) (string, error) {
	kind, name, ok := strings.Cut(args[0], "/")
	if !ok {
		name, kind = kind, "deployment"
	}
	switch strings.ToLower(kind) {
	case "deploy", "deployment", "deployments", "deployment.apps", "deployments.apps":
	default:
		return "", fmt.Errorf("%q: only Deployments are supported (deploy/NAME)", args[0])
	}
	if name == "" {
		return "", fmt.Errorf("%q: missing name (deploy/NAME)", args[0])
	}
	return name, nil
}

func client(env *Env, flags *genericclioptions.ConfigFlags) (kubernetes.Interface, string, error) {
	if env.Client != nil {
		ns := env.Namespace
		if flags.Namespace != nil && *flags.Namespace != "" {
			ns = *flags.Namespace
		}
		return env.Client, ns, nil
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	return cs, ns, nil
}

// readSpec reads a changed manifest for plan -f.
func readSpec(path, name string) (*appsv1.DeploymentSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ds, err := planner.DecodeDeployments(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, d := range ds {
		if d.Name == name {
			return &d.Spec, nil
		}
	}
	if len(ds) == 1 && ds[0].Name == "" {
		return &ds[0].Spec, nil
	}
	return nil, fmt.Errorf("%s: no Deployment named %q in the file", path, name)
}
