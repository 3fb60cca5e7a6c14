package cluster

import "github.com/ctrlkit/ctrlkit/kube/simkubelet"

// The simulated kubelet moved to package simkubelet, where users and
// every suite can import it; these names stay for the suites that use
// them from here.
type (
	// Kubelet is simkubelet.Kubelet.
	Kubelet = simkubelet.Kubelet
	// FaultKubelet is simkubelet.FaultKubelet.
	FaultKubelet = simkubelet.FaultKubelet
	// Fault is simkubelet.Fault.
	Fault = simkubelet.Fault
	// PodTimes is simkubelet.PodTimes.
	PodTimes = simkubelet.PodTimes
)

// The faults of simkubelet.
const (
	Healthy        = simkubelet.Healthy
	ImagePull      = simkubelet.ImagePull
	InvalidImage   = simkubelet.InvalidImage
	CrashLoop      = simkubelet.CrashLoop
	OOMKilled      = simkubelet.OOMKilled
	InitCrashLoop  = simkubelet.InitCrashLoop
	ConfigError    = simkubelet.ConfigError
	Unschedulable  = simkubelet.Unschedulable
	ReadinessFails = simkubelet.ReadinessFails
)

// SchedulerMessage is simkubelet.SchedulerMessage.
const SchedulerMessage = simkubelet.SchedulerMessage
