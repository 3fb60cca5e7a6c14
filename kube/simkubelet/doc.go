// Package simkubelet plays scheduler and kubelet for the pods of a real
// API server that has no nodes: a loopback kube-apiserver
// (hack/controlplane.sh), a kind cluster with no workers, an envtest. With
// it, Deployment and ReplicaSet controllers (ctrlkit's or
// kube-controller-manager's) roll out for real, and the rollouts that get
// stuck on a real cluster can be reproduced: every fault writes the pod
// status, and records the events, that a real kubelet or scheduler writes
// for it, so tools that read them (kubectl, `kubectl ctrlkit why`) see
// what they would see on a real node.
//
// Two kubelets:
//
//   - [Kubelet] marks each new pod Running and Ready after a delay, and
//     finishes deletions at once. It is the cheapest; the e2e suites use
//     it where only the controllers' writes matter.
//   - [FaultKubelet] binds each pod to a node (node-1…node-3, or the
//     spec.nodeName of its template), starts it, makes it Ready after
//     ReadyDelay, confirms graceful deletions, and gives the pods its
//     Fault function picks the failure of that name: an image that cannot
//     be pulled ([ImagePull], [InvalidImage], [PrivateImage] without
//     credentials), a crash loop ([CrashLoop], [OOMKilled],
//     [InitCrashLoop]), a missing ConfigMap ([ConfigError]), no node that
//     fits ([Unschedulable]), a failing readiness probe
//     ([ReadinessFails]), or a rejection by the kubelet's admission
//     ([OutOfCPU], [OutOfMemory], [NodeAffinity],
//     [UnexpectedAdmissionError]: the pod ends Failed with the reason and
//     "Pod was rejected: …", and the kubelet's Warning event). A pod
//     naming imagePullSecrets that do not exist gets the kubelet's
//     FailedToRetrieveImagePullSecret event. It records when it did what
//     to each pod ([FaultKubelet.Times]).
//
// # Usage
//
// In a test or a program, next to the controllers:
//
//	k := &simkubelet.FaultKubelet{Client: cs, Namespace: "shop", ReadyDelay: 2 * time.Second,
//		Fault: func(p *corev1.Pod) simkubelet.Fault {
//			if p.Spec.Containers[0].Image == "web:2" {
//				return simkubelet.ImagePull
//			}
//			return simkubelet.Healthy
//		}}
//	go k.Run(ctx)
//
// From a shell, the command ctrlkit-simkubelet runs a FaultKubelet:
//
//	go install github.com/ctrlkit/ctrlkit/kube/cmd/ctrlkit-simkubelet@latest
//	ctrlkit-simkubelet --kubeconfig=$DIR/kubeconfig -n shop --ready-after=2s --fault web:2=ImagePull
//
// Only one kubelet may serve a namespace (and none where real nodes run
// the pods).
package simkubelet
