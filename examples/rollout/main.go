// Command rollout runs a Deployment rollout on an in-memory cluster and
// prints it as a timeline.
//
// Both controllers of this library (Deployment and ReplicaSet) run as
// they would in kube-controller-manager: informers feed work queues, and
// workers reconcile. A simulated kubelet runs the pods. By default time is
// virtual: minutes of rollout take milliseconds, and the same flags give
// the same timeline.
//
// The run creates a Deployment, waits until it is rolled out, then updates
// its image and prints every step of the second rollout: the virtual time,
// the old and new ReplicaSets (spec/ready), the pods, how many are
// available, the conditions and the controller's events. A summary
// follows: how long it took, the peak number of pods and the minimum
// number available.
//
// Usage:
//
//	go run ./examples/rollout
//	go run ./examples/rollout --replicas 20 --max-surge 0 --max-unavailable 5
//	go run ./examples/rollout --strategy Recreate
//	go run ./examples/rollout --fail bad-image=0.3 --progress-deadline 2m
//	go run ./examples/rollout --fail api=0.05,crash-loop=0.2 --seed 7
//	go run ./examples/rollout --realtime --ready-after 1s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func main() {
	switch err := run(os.Args[1:], os.Stdout); {
	case errors.Is(err, flag.ErrHelp):
		// -h: the usage is printed; asking for it is not an error.
	case err != nil:
		fmt.Fprintln(os.Stderr, "rollout:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	replicas         int
	maxSurge         string
	maxUnavailable   string
	strategy         string
	readyAfter       time.Duration
	progressDeadline time.Duration
	fail             failures
	realtime         bool
	seed             uint64
	fromImage        string
	toImage          string
}

// errRolloutFailed is returned when the update does not complete: its
// progress deadline passes first.
var errRolloutFailed = errors.New("the rollout did not complete")

// run parses args, runs the simulation and writes the timeline to out.
func run(args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("rollout", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.IntVar(&o.replicas, "replicas", 10, "desired replicas of the Deployment")
	fs.StringVar(&o.maxSurge, "max-surge", "25%", "rolling update maxSurge (a number or a percentage)")
	fs.StringVar(&o.maxUnavailable, "max-unavailable", "25%", "rolling update maxUnavailable (a number or a percentage)")
	fs.StringVar(&o.strategy, "strategy", string(appsv1.RollingUpdateDeploymentStrategyType), "RollingUpdate or Recreate")
	fs.DurationVar(&o.readyAfter, "ready-after", 5*time.Second, "how long a started pod takes to become Ready")
	fs.DurationVar(&o.progressDeadline, "progress-deadline", 10*time.Minute, "the Deployment's progressDeadlineSeconds")
	fs.Var(&o.fail, "fail", "failure injection, e.g. bad-image=0.3,crash-loop=0.1,api=0.05: fractions of new pods that\n"+
		"never pull their image or crash-loop, and the rate of failing API writes")
	fs.BoolVar(&o.realtime, "realtime", false, "run on the wall clock instead of virtual time (for demos)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of every random choice (names, failures, faults)")
	fs.StringVar(&o.fromImage, "from", "nginx:1.27", "image of the first rollout")
	fs.StringVar(&o.toImage, "to", "nginx:1.28", "image of the update")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := o.validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return simulate(ctx, o, out)
}

// validate checks the flags that the API server would not check for us.
func (o options) validate() error {
	switch {
	case o.replicas < 0:
		return fmt.Errorf("--replicas must not be negative, got %d", o.replicas)
	case o.readyAfter < 0:
		return fmt.Errorf("--ready-after must not be negative, got %v", o.readyAfter)
	case o.progressDeadline < time.Second:
		return fmt.Errorf("--progress-deadline must be at least 1s, got %v", o.progressDeadline)
	case o.strategy != string(appsv1.RollingUpdateDeploymentStrategyType) && o.strategy != string(appsv1.RecreateDeploymentStrategyType):
		return fmt.Errorf("--strategy must be RollingUpdate or Recreate, got %q", o.strategy)
	case o.fromImage == o.toImage:
		return fmt.Errorf("--from and --to are the same image %q: nothing would roll out", o.fromImage)
	}
	return nil
}

// strategyOf returns the Deployment strategy the flags ask for.
func (o options) strategyOf() appsv1.DeploymentStrategy {
	if o.strategy == string(appsv1.RecreateDeploymentStrategyType) {
		return appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	surge, unavailable := intstr.Parse(o.maxSurge), intstr.Parse(o.maxUnavailable)
	return appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
	}
}
