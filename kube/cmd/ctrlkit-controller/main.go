// Command ctrlkit-controller runs ctrlkit's Deployment and ReplicaSet
// controllers against a Kubernetes cluster, in place of those of
// kube-controller-manager (run one or the other, never both).
//
// Usage:
//
//	ctrlkit-controller --kubeconfig=$HOME/.kube/config [--namespace=NS] [--workers=5]
//	    [--leader-elect] [--kube-api-qps=20 --kube-api-burst=30] [--bind-address=127.0.0.1:10271]
//	    [--feature-gates=PodDeletionCost=false,...]
//	    [--shard --shard-ranges=16 --shard-lease-namespace=kube-system ...]
//
// --feature-gates takes kube-controller-manager's syntax and gives its
// answers (k8s.io/component-base/featuregate at v1.37) for the gates the
// Deployment and ReplicaSet controllers consult and client-go's; a gate
// of another controller is unrecognized here.
//
// It serves /healthz, /metrics (Prometheus) and /debug/pprof in plain
// HTTP on --bind-address (loopback only), and with --secure-port over TLS
// with delegated authentication and authorization, as
// kube-controller-manager does. On SIGTERM or SIGINT it stops taking work, lets the syncs
// in progress finish, stops its events (a write in flight completes; events still queued are dropped) and then releases its leader lease.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/shard"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

type options struct {
	kubeconfig        string
	namespace         string
	workers           int
	deploymentSyncs   int
	replicaSetSyncs   int
	batchPeriod       time.Duration
	eagerStatus       bool
	lowPriorityEvents bool
	eventsAPI         string
	contentType       string
	profiling         bool
	qps               float64
	burst             int
	bindAddress       string
	secure            secureOptions
	shutdownGrace     time.Duration
	leaderElect       bool
	leaseNamespace    string
	leaseName         string
	leaseDuration     time.Duration
	renewDeadline     time.Duration
	retryPeriod       time.Duration
	// featureGates are the values of --feature-gates, gates what they set.
	featureGates gateValues
	gates        features.Gates
	shard        shardOptions
}

// shardOptions are the --shard* flags.
type shardOptions struct {
	enabled                                   bool
	ranges                                    int
	group, identity, namespace                string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	layout, selector                          string
}

func main() {
	o, err := parseFlags(os.Args[0], os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // the flag package printed the error and the usage
	}
	// --feature-gates is answered as kube-controller-manager answers it:
	// component-base's error, logged, and exit status 1.
	fg, err := newFeatureGate()
	if err == nil {
		o.gates, err = featureGates(fg, o.featureGates)
	}
	if err != nil {
		klog.ErrorS(err, "command failed")
		klog.Flush()
		os.Exit(1)
	}
	// client-go consults the same gates, as in kube-controller-manager.
	clientfeatures.ReplaceFeatureGates(clientGates{fg})
	log := klog.NewKlogr().WithName("ctrlkit-controller")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(logr.NewContext(ctx, log), o); err != nil {
		log.Error(err, "Exiting")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// parseFlags parses the command line args of the program called name.
func parseFlags(name string, args []string) (options, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var o options
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty means $KUBECONFIG if set, else the in-cluster configuration (the pod's ServiceAccount)")
	fs.StringVar(&o.namespace, "namespace", "", "only manage objects in this namespace; empty means all")
	fs.IntVar(&o.deploymentSyncs, "concurrent-deployment-syncs", 5, "Deployments synced concurrently (kube-controller-manager's flag)")
	fs.IntVar(&o.replicaSetSyncs, "concurrent-replicaset-syncs", 5, "ReplicaSets synced concurrently (kube-controller-manager's flag)")
	fs.IntVar(&o.workers, "workers", 0, "DEPRECATED: sets both --concurrent-deployment-syncs and --concurrent-replicaset-syncs, unless they are given")
	fs.DurationVar(&o.batchPeriod, "sync-batch-period", 0, "delay the syncs that pod events and ReplicaSet status changes trigger by this much, so that\n"+
		"a burst of them costs one sync and one status write; 0 syncs at once, like kube-controller-manager")
	fs.BoolVar(&o.eagerStatus, "eager-status", false, "write statuses with kube-controller-manager's timing, also in syncs that only create or delete\n"+
		"pods or only scale ReplicaSets (more writes); by default the sync their events trigger writes the status")
	fs.BoolVar(&o.lowPriorityEvents, "low-priority-events", false, "let a controller's writes go before its events within the one rate limit they share\n"+
		"(events still get one request in 20 while they wait); kube-controller-manager makes them take turns")
	fs.StringVar(&o.eventsAPI, "events-api", "core/v1", "API of the controllers' events: core/v1 (as kube-controller-manager's Deployment and ReplicaSet\n"+
		"controllers) or events.k8s.io/v1 (an action derived from each reason; reasons and messages unchanged)")
	fs.Float64Var(&o.qps, "kube-api-qps", 20, "queries per second to the API server")
	fs.IntVar(&o.burst, "kube-api-burst", 30, "burst of queries to the API server")
	fs.BoolVar(&o.profiling, "profiling", true, "serve /debug/pprof on --bind-address, like kube-controller-manager")
	fs.StringVar(&o.contentType, "kube-api-content-type", "application/vnd.kubernetes.protobuf", "content type of requests to the API server")
	fs.StringVar(&o.bindAddress, "bind-address", "127.0.0.1:10271", "loopback host:port of /healthz, /metrics and /debug/pprof in plain HTTP; empty disables it\n"+
		"(unlike kube-controller-manager's --bind-address, the IP of its secure port: see --secure-bind-address)")
	fs.IntVar(&o.secure.port, "secure-port", 0, "serve /healthz, /metrics and /debug/pprof over TLS on this port, with delegated authentication and\n"+
		"authorization (TokenReview, SubjectAccessReview) as kube-controller-manager's 10257; 0 disables it")
	fs.StringVar(&o.secure.bindAddress, "secure-bind-address", "0.0.0.0", "IP of --secure-port")
	fs.StringVar(&o.secure.certFile, "tls-cert-file", "", "certificate of --secure-port; empty means a self-signed one made at start")
	fs.StringVar(&o.secure.keyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	var allow string
	fs.StringVar(&allow, "authorization-always-allow-paths", "/healthz,/readyz,/livez", "comma-separated paths --secure-port serves without authentication")
	fs.DurationVar(&o.secure.authCacheTTL, "authentication-token-webhook-cache-ttl", 10*time.Second, "how long --secure-port caches TokenReview and SubjectAccessReview answers")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace", 30*time.Second, "how long in-flight work may take to drain at shutdown")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "run only while holding a coordination.k8s.io Lease")
	fs.StringVar(&o.leaseNamespace, "leader-elect-resource-namespace", "kube-system", "namespace of the Lease")
	fs.StringVar(&o.leaseName, "leader-elect-resource-name", "ctrlkit-controller", "name of the Lease")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "lease duration")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "renew deadline")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "retry period")
	fs.Var(&o.featureGates, "feature-gates", gatesUsage())
	fs.BoolVar(&o.shard.enabled, "shard", false, "run as one of N active replicas that share the namespaces: each runs the controllers of the ranges of\n"+
		"the hash of namespace names it owns, coordinated by coordination.k8s.io Leases (see --shard-*); off, one process\n"+
		"manages every namespace (or --namespace), as kube-controller-manager does. Not with --leader-elect or --namespace")
	fs.IntVar(&o.shard.ranges, "shard-ranges", 16, "ranges the 64-bit FNV-1a hash space of namespace names is cut into, the units that move between\n"+
		"replicas; every replica of a group needs the same number")
	fs.StringVar(&o.shard.group, "shard-group", "ctrlkit-controller", "name of the sharded group: its assignment Lease, and the prefix of its members' Leases")
	fs.StringVar(&o.shard.identity, "shard-identity", "", "this replica's identity in the group (its Lease is <group>-<identity>); empty means the host name\n"+
		"and a random suffix")
	fs.StringVar(&o.shard.namespace, "shard-lease-namespace", "kube-system", "namespace of the group's Leases")
	fs.DurationVar(&o.shard.leaseDuration, "shard-lease-duration", 15*time.Second, "how long the others wait after a replica's Lease last changed before they take its ranges")
	fs.DurationVar(&o.shard.renewDeadline, "shard-renew-deadline", 10*time.Second, "how long a replica runs its ranges without renewing its Lease before it stops them")
	fs.DurationVar(&o.shard.retryPeriod, "shard-retry-period", 2*time.Second, "how often a replica renews its Lease and re-reads the assignment")
	fs.StringVar(&o.shard.layout, "shard-layout", "namespaces", "where the ranges start when the group is first created: namespaces (each range starts with as many of\n"+
		"the namespaces that exist then; FNV-1a spreads similar names such as ns-001 … ns-200 badly) or even (equal ranges)")
	fs.StringVar(&o.shard.selector, "shard-selector", "auto", "auto: ask the API server for the ranges' objects only (shardSelector; kube-apiserver with\n"+
		"--feature-gates=ShardedListAndWatch=true), and drop the others on the client if it sends them anyway; client: filter on\n"+
		"the client only (every replica then receives every event)")
	klog.InitFlags(fs)
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.secure.alwaysAllow = strings.Split(allow, ",")
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.workers > 0 {
		if !set["concurrent-deployment-syncs"] {
			o.deploymentSyncs = o.workers
		}
		if !set["concurrent-replicaset-syncs"] {
			o.replicaSetSyncs = o.workers
		}
	}
	return o, nil
}

func run(ctx context.Context, o options) error {
	log := logr.FromContextOrDiscard(ctx)
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	cfg.ContentType = o.contentType
	cfg.UserAgent = rest.DefaultKubernetesUserAgent() + "/ctrlkit-controller"

	// A registry of our own, never the global one, with the Go runtime
	// and process series every Kubernetes component exposes.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := kube.NewMetrics(reg)
	if err != nil {
		return err
	}
	sharding, err := o.sharding()
	if err != nil {
		return err
	}
	op := &kube.Operator{Config: cfg, Namespace: o.namespace, Sharding: sharding, DeploymentWorkers: o.deploymentSyncs, ReplicaSetWorkers: o.replicaSetSyncs, BatchPeriod: o.batchPeriod, EagerStatus: o.eagerStatus, FeatureGates: o.gates, LowPriorityEvents: o.lowPriorityEvents, EventsAPI: o.eventsAPI, Metrics: metrics,
		Grace: o.shutdownGrace, Logger: log}
	watchdog := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	mux := handlers(metrics, watchdog, o.profiling)
	if o.bindAddress != "" {
		stopServer, err := serveInsecure(log, o.bindAddress, mux)
		if err != nil {
			return err
		}
		defer stopServer()
	}
	if o.secure.port != 0 {
		cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
		if err != nil {
			return err
		}
		stopServer, err := serveSecure(log, cs, o.secure, mux)
		if err != nil {
			return err
		}
		defer stopServer()
	}
	if !o.leaderElect {
		return op.Run(ctx)
	}
	return runElected(ctx, o, cfg, op, watchdog)
}

// sharding returns the Operator's sharding of the --shard* flags, nil
// without --shard.
func (o options) sharding() (*kube.Sharding, error) {
	if !o.shard.enabled {
		return nil, nil
	}
	switch {
	case o.leaderElect:
		return nil, errors.New("--shard runs every replica at once; --leader-elect runs one: choose one")
	case o.namespace != "":
		return nil, errors.New("--shard shares every namespace among the replicas; it cannot be combined with --namespace")
	case o.shard.ranges < 1:
		return nil, fmt.Errorf("--shard-ranges is %d: the hash space needs at least 1 range", o.shard.ranges)
	case o.shard.leaseDuration <= 0 || o.shard.renewDeadline <= 0 || o.shard.retryPeriod <= 0:
		return nil, errors.New("--shard-lease-duration, --shard-renew-deadline and --shard-retry-period must be positive")
	}
	return &kube.Sharding{Group: o.shard.group, Identity: o.shard.identity, Namespace: o.shard.namespace, Ranges: o.shard.ranges,
		LeaseDuration: o.shard.leaseDuration, RenewDeadline: o.shard.renewDeadline, RetryPeriod: o.shard.retryPeriod,
		Layout: shard.Layout(o.shard.layout), Selector: kube.SelectorMode(o.shard.selector)}, nil
}

// runElected runs op while this process holds the Lease. On shutdown it
// drains op first and only then releases the lease, so that a successor
// never overlaps with work still in flight here.
func runElected(ctx context.Context, o options, cfg *rest.Config, op *kube.Operator, watchdog *leaderelection.HealthzAdaptor) error {
	log := logr.FromContextOrDiscard(ctx)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	id, err := os.Hostname()
	if err != nil {
		return err
	}
	id = fmt.Sprintf("%s_%d", id, os.Getpid())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.leaseNamespace, Name: o.leaseName},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	// leCtx outlives ctx until op has drained.
	leCtx, cancelLE := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelLE()
	opDone := make(chan error, 1)
	started := make(chan struct{})
	lost := make(chan struct{})
	op.Metrics.SetLeader(o.leaseName, false)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: o.leaseDuration, RenewDeadline: o.renewDeadline, RetryPeriod: o.retryPeriod,
		ReleaseOnCancel: true, Name: o.leaseName, WatchDog: watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				close(started)
				op.Metrics.SetLeader(o.leaseName, true)
				runCtx, cancel := context.WithCancel(leading)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				opDone <- op.Run(runCtx)
			},
			OnStoppedLeading: func() {
				op.Metrics.SetLeader(o.leaseName, false)
				close(lost)
			},
			OnNewLeader: func(identity string) { log.Info("Leader", "identity", identity, "self", identity == id) },
		},
	})
	if err != nil {
		return err
	}
	leDone := make(chan struct{})
	go func() { defer close(leDone); le.Run(leCtx) }()

	var runErr error
	select {
	case <-ctx.Done():
	case <-lost:
		if ctx.Err() == nil {
			runErr = errors.New("leader election lost")
		}
	}
	select {
	case <-started:
		runErr = errors.Join(runErr, <-opDone) // drained
	default:
	}
	cancelLE() // releases the lease
	<-leDone
	return runErr
}
