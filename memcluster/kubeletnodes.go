package memcluster

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The Nodes a Kubelet registers are what a v1.37 kubelet on a Linux
// machine registers (see kubelet_node_status.go's initialNode and the
// nodestatus setters upstream), with fixed machine facts:
//
//   - labels kubernetes.io/hostname (the node's name), kubernetes.io/os
//     linux, kubernetes.io/arch amd64 and their beta.kubernetes.io twins,
//     which the kubelet still sets; topology.kubernetes.io/zone when
//     KubeletConfig.Zones gives one;
//   - the annotation volumes.kubernetes.io/controller-managed-attach-detach;
//   - capacity cpu 4, memory 16Gi, pods 110, ephemeral-storage 100Gi,
//     hugepages-1Gi and hugepages-2Mi 0; allocatable the same less the
//     default hard eviction thresholds (memory 100Mi, ephemeral-storage
//     10%);
//   - the conditions MemoryPressure, DiskPressure and PIDPressure False
//     and Ready True, with the kubelet's reasons and messages;
//   - addresses InternalIP 10.0.0.<n+1> (the hostIP of its pods) and
//     Hostname; the kubelet's endpoint on port 10250; nodeInfo with
//     kubeletVersion v1.37.1, containerd 2.1, and machine, system and boot
//     IDs drawn from the seed.
//
// Not modelled: heartbeats (lastHeartbeatTime stays the registration
// time, no Lease in kube-node-lease), taints (none; the not-ready taint
// the node lifecycle controller manages is never needed, as a Node is
// Ready from its registration), NotReady and unreachable Nodes, node
// pressure and eviction, images, volumes in use, the podCIDR that
// kube-controller-manager allocates, and re-registration: a Node deleted
// stays deleted, gets no new pods, and its pods run on (nothing plays the
// pod garbage collector that deletes the pods of a Node that is gone).

// nodeGK is the group and kind of Nodes.
var nodeGK = schema.GroupKind{Kind: "Node"}

// nodeIDs are the random facts of a registered Node.
type nodeIDs struct {
	uid                          types.UID
	machineID, systemUUID, boots string
}

// newNodeIDs draws the IDs of the Node numbered n from a source of the
// seed's own, so that registering Nodes changes no other draw of the
// cluster.
func newNodeIDs(seed uint64, n int) nodeIDs {
	r := rand.New(rand.NewPCG(seed, 0x6e6f6465^uint64(n)<<32))
	uuid := func() string {
		var b [16]byte
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
	ids := nodeIDs{uid: types.UID(uuid()), systemUUID: uuid(), boots: uuid()}
	ids.machineID = fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
	return ids
}

// kubeletNode is the Node the kubelet registers as name, the n-th of its
// nodes, in zone ("" for none), at now.
func kubeletNode(name string, n int, zone string, ids nodeIDs, now metav1.Time) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:      name,
		corev1.LabelOSStable:      "linux",
		corev1.LabelArchStable:    "amd64",
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": "amd64",
	}
	if zone != "" {
		labels[corev1.LabelTopologyZone] = zone
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("16Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
	allocatable := capacity.DeepCopy()
	allocatable[corev1.ResourceMemory] = resource.MustParse("16284Mi")
	allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("90Gi")
	condition := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	yes := true
	handler := func(name string) corev1.NodeRuntimeHandler {
		return corev1.NodeRuntimeHandler{Name: name, Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &yes, UserNamespaces: &yes}}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Conditions: []corev1.NodeCondition{
				condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.0.%d", n+1)},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               ids.machineID,
				SystemUUID:              ids.systemUUID,
				BootID:                  ids.boots,
				KernelVersion:           "6.12.0-ctrlkit",
				OSImage:                 "Debian GNU/Linux 13 (trixie)",
				ContainerRuntimeVersion: "containerd://2.1.4",
				KubeletVersion:          "v1.37.1",
				OperatingSystem:         "linux",
				Architecture:            "amd64",
			},
			RuntimeHandlers: []corev1.NodeRuntimeHandler{handler("runc"), handler("")},
			Features:        &corev1.NodeFeatures{SupplementalGroupsPolicy: &yes},
		},
	}
}

// checkZones returns an error for a zone that is not a label value.
func checkZones(zones []string) error {
	for _, z := range zones {
		if errs := validation.IsValidLabelValue(z); len(errs) > 0 || z == "" {
			return fmt.Errorf("memcluster: KubeletConfig.Zones: %q is not a zone (a label value of topology.kubernetes.io/zone): %v", z, errs)
		}
	}
	return nil
}

// nodesLocked returns the cluster's Nodes, if it serves them.
func (c *Cluster) nodesLocked() *Resource[*corev1.Node] {
	r, _ := c.kinds[nodeGK].(*Resource[*corev1.Node])
	return r
}

// registerLocked registers the kubelet's Nodes that do not exist yet (one
// that does, the kubelet takes as its own), as the kubelet writes them.
func (k *Kubelet) registerLocked(zones []string) error {
	nodes := k.c.nodesLocked()
	if nodes == nil {
		return nil // NewKubelet serves them first
	}
	for n, name := range k.nodes {
		if _, ok := nodes.objs[types.NamespacedName{Name: name}]; ok {
			continue
		}
		zone := ""
		if len(zones) > 0 {
			zone = zones[n%len(zones)]
		}
		ids := newNodeIDs(k.c.cfg.Seed, n)
		_, err := nodes.createWithUIDLocked(kubeletNode(name, n, zone, ids, k.c.now()), "", author{manager: kubeletManager}, ids.uid)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("memcluster: kubelet: register node %s: %w", name, err)
		}
	}
	return nil
}

// nodeServedLocked reports whether the cluster has the Node name.
func (k *Kubelet) nodeServedLocked(name string) bool {
	nodes := k.c.nodesLocked()
	if nodes == nil {
		return false
	}
	_, ok := nodes.objs[types.NamespacedName{Name: name}]
	return ok
}

// nextNodeLocked returns the index of the next of the kubelet's Nodes to
// bind a pod to, round-robin over those that exist, or -1 if none does.
func (k *Kubelet) nextNodeLocked() int {
	for range k.nodes {
		n := k.bound % len(k.nodes)
		k.bound++
		if k.nodeServedLocked(k.nodes[n]) {
			return n
		}
	}
	return -1
}

// nodeWrittenLocked is called by the cluster, with c.mu held, after a
// write of a Node: a pod waiting for one is bound at the next Sync.
func (k *Kubelet) nodeWrittenLocked() {
	if k.syncing {
		return
	}
	k.all = true
	k.wake()
}
