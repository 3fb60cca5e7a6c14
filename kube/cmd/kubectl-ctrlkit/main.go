// Command kubectl-ctrlkit is a kubectl plugin that explains and predicts
// Deployment rollouts with the Deployment controller's own rules.
//
// Install it on your PATH and kubectl finds it:
//
//	go install github.com/ctrlkit/ctrlkit/kube/cmd/kubectl-ctrlkit@latest
//	kubectl ctrlkit why deploy/web                 # why is the rollout stuck?
//	kubectl ctrlkit plan deploy/web --image web=nginx:1.28   # what will it do?
//	kubectl ctrlkit plan deploy/web -f web.yaml
//	kubectl ctrlkit history deploy/web             # revisions and what changed
//
// The usual kubectl flags apply (--kubeconfig, --context, -n/--namespace,
// …), and -o json|yaml on every command. Exit codes: 0 complete or
// progressing (why), completes (plan); 1 stuck (why) or stalls (plan);
// 2 an error (a missing object, no permission, an unreachable server).
// The logic lives in package plugin.
package main

import (
	"context"
	"os"
	"os/signal"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ctrlkit/ctrlkit/kube/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := plugin.Execute(ctx, os.Args[1:], plugin.Env{
		Streams: genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
	})
	stop()
	os.Exit(code)
}
