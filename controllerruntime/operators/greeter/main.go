package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/informers/externalversions"
)

var (
	masterURL  string
	kubeconfig string
)

// As kubernetes/sample-controller registers them: in init, on the
// process's flag.CommandLine. A package this program imports that
// registered -kubeconfig too would make it panic before main.
func init() {
	flag.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Only required if out-of-cluster.")
	flag.StringVar(&masterURL, "master", "", "The address of the Kubernetes API server. Overrides any value in kubeconfig. Only required if out-of-cluster.")
}

func main() {
	klog.InitFlags(nil)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags(masterURL, kubeconfig)
	if err != nil {
		klog.ErrorS(err, "Error building kubeconfig")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	if err := run(ctx, cfg, 2); err != nil {
		klog.ErrorS(err, "Error running controller")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}

// run starts the informers and the controller with workers workers on
// cfg's cluster, and returns when ctx is done and they have stopped.
func run(ctx context.Context, cfg *rest.Config, workers int) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	greeters, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kubeInformers := kubeinformers.NewSharedInformerFactory(kube, 30*time.Second)
	greeterInformers := externalversions.NewSharedInformerFactory(greeters, 30*time.Second)
	ctl, err := NewController(kube, greeters, kubeInformers.Apps().V1().Deployments(), greeterInformers.Greeter().V1().Greeters())
	if err != nil {
		return err
	}
	kubeInformers.Start(ctx.Done())
	greeterInformers.Start(ctx.Done())
	defer kubeInformers.Shutdown()
	defer greeterInformers.Shutdown()
	return ctl.Run(ctx, workers)
}
