package memcluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// nodes is a client of the cluster's Nodes.
func nodes(t *testing.T, c *Cluster) Client[*corev1.Node] {
	t.Helper()
	c.mu.Lock()
	r := c.nodesLocked()
	c.mu.Unlock()
	if r == nil {
		t.Fatal("the cluster serves no Nodes")
	}
	return r.Namespace("")
}

// A kubelet registers its Nodes as a v1.37 kubelet does, when it is
// created: the cluster serves Nodes from then on.
func TestKubeletRegistersItsNodes(t *testing.T) {
	c := New(Config{Clock: newFake(), Seed: 1, TypeConverter: managedfields.NewDeducedTypeConverter()})
	k := NewKubelet(c, KubeletConfig{Nodes: 2, Zones: []string{"zone-a"}})
	if err := k.Err(); err != nil {
		t.Fatal(err)
	}
	list, _, err := nodes(t, c).List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list {
		names = append(names, n.Name)
	}
	if diff := cmp.Diff([]string{"node-0", "node-1"}, names); diff != "" {
		t.Errorf("nodes mismatch (-want +got):\n%s", diff)
	}
	n := list[1]
	wantLabels := map[string]string{"kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "zone-a"}
	if diff := cmp.Diff(wantLabels, n.Labels); diff != "" {
		t.Errorf("labels mismatch (-want +got):\n%s", diff)
	}
	var conds []string
	for _, cond := range n.Status.Conditions {
		conds = append(conds, string(cond.Type)+"="+string(cond.Status)+" "+cond.Reason)
		if !cond.LastHeartbeatTime.Time.Equal(t0) || !cond.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("condition %s at %v/%v, want the registration time %v", cond.Type, cond.LastHeartbeatTime, cond.LastTransitionTime, t0)
		}
	}
	wantConds := []string{"MemoryPressure=False KubeletHasSufficientMemory", "DiskPressure=False KubeletHasNoDiskPressure",
		"PIDPressure=False KubeletHasSufficientPID", "Ready=True KubeletReady"}
	if diff := cmp.Diff(wantConds, conds); diff != "" {
		t.Errorf("conditions mismatch (-want +got):\n%s", diff)
	}
	for name, want := range map[corev1.ResourceName][2]string{
		corev1.ResourceCPU: {"4", "4"}, corev1.ResourceMemory: {"16Gi", "16284Mi"}, corev1.ResourcePods: {"110", "110"},
		corev1.ResourceEphemeralStorage: {"100Gi", "90Gi"},
	} {
		capacity, allocatable := n.Status.Capacity[name], n.Status.Allocatable[name]
		if capacity.Cmp(resource.MustParse(want[0])) != 0 || allocatable.Cmp(resource.MustParse(want[1])) != 0 {
			t.Errorf("%s: capacity %v, allocatable %v; want %s, %s", name, &capacity, &allocatable, want[0], want[1])
		}
	}
	wantAddrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}, {Type: corev1.NodeHostName, Address: "node-1"}}
	if diff := cmp.Diff(wantAddrs, n.Status.Addresses); diff != "" {
		t.Errorf("addresses mismatch (-want +got):\n%s", diff)
	}
	info := n.Status.NodeInfo
	if info.KubeletVersion != "v1.37.1" || info.OperatingSystem != "linux" || info.Architecture != "amd64" || len(info.MachineID) != 32 || info.SystemUUID == "" || info.BootID == "" {
		t.Errorf("nodeInfo %+v", info)
	}
	if len(n.ManagedFields) != 1 || n.ManagedFields[0].Manager != "kubelet" || n.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Errorf("managedFields %v, want the kubelet's update", n.ManagedFields)
	}
}

// Pods are bound to the kubelet's Nodes that exist, round-robin; a pod
// waits, unbound, while none does, and is bound once one is created.
func TestKubeletBindsOnlyToServedNodes(t *testing.T) {
	c, _ := newTestCluster(t)
	k := NewKubelet(c, KubeletConfig{Nodes: 3})
	if err := nodes(t, c).Delete(ctxT(t), "node-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		must(c.Pods("ns").Create(ctxT(t), pod(n, "", ""), metav1.CreateOptions{}))(t)
	}
	k.Sync()
	var got []string
	for _, n := range []string{"a", "b", "c"} {
		got = append(got, strings.Fields(podLine(t, c, n))[0])
	}
	if diff := cmp.Diff([]string{"node-0", "node-2", "node-0"}, got); diff != "" {
		t.Errorf("nodes of the pods mismatch (-want +got):\n%s", diff)
	}

	for _, n := range []string{"node-0", "node-2"} {
		if err := nodes(t, c).Delete(ctxT(t), n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	must(c.Pods("ns").Create(ctxT(t), pod("d", "", ""), metav1.CreateOptions{}))(t)
	k.Sync()
	if p := must(c.Pods("ns").Get(ctxT(t), "d", metav1.GetOptions{}))(t); p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		t.Errorf("with no Node, pod d is on %q, %s; want unbound and Pending", p.Spec.NodeName, p.Status.Phase)
	}
	// A Node of the kubelet's comes (back): the pod is bound to it.
	n := kubeletNode("node-1", 1, "", newNodeIDs(1, 1), metav1.NewTime(t0))
	must(nodes(t, c).Create(ctxT(t), n, metav1.CreateOptions{}))(t)
	k.Sync()
	if p := must(c.Pods("ns").Get(ctxT(t), "d", metav1.GetOptions{}))(t); p.Spec.NodeName != "node-1" {
		t.Errorf("pod d is on %q once node-1 exists, want node-1", p.Spec.NodeName)
	}
}

// A zone that is not a label value is an error of the kubelet, which then
// registers no Node and binds no pod.
func TestKubeletRefusesABadZone(t *testing.T) {
	c, _ := newTestCluster(t)
	k := NewKubelet(c, KubeletConfig{Zones: []string{"not a zone"}})
	if err := k.Err(); err == nil || !strings.Contains(err.Error(), `"not a zone"`) {
		t.Errorf("Err() = %v, want an error naming the zone", err)
	}
	must(c.Pods("ns").Create(ctxT(t), pod("a", "", ""), metav1.CreateOptions{}))(t)
	k.Sync()
	if p := must(c.Pods("ns").Get(ctxT(t), "a", metav1.GetOptions{}))(t); p.Spec.NodeName != "" {
		t.Errorf("pod bound to %q by a kubelet with no Node", p.Spec.NodeName)
	}
}

// Registering Nodes draws from a source of its own: the names and UIDs
// the cluster generates for everything else are the same with a kubelet
// or without, and two clusters of one seed register the same Nodes.
func TestKubeletNodesChangeNoOtherDraw(t *testing.T) {
	run := func(kubelet bool) (podName, podUID string, nodeUIDs []string) {
		c, _ := newTestCluster(t)
		if kubelet {
			NewKubelet(c, KubeletConfig{})
			list, _, err := nodes(t, c).List(ctxT(t), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range list {
				nodeUIDs = append(nodeUIDs, string(n.UID))
			}
		}
		p := pod("", "", "")
		p.GenerateName = "web-"
		p = must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
		return p.Name, string(p.UID), nodeUIDs
	}
	name, uid, _ := run(false)
	name2, uid2, nodes1 := run(true)
	if name != name2 || uid != uid2 {
		t.Errorf("with a kubelet the pod is %s (%s), without %s (%s): want the same", name2, uid2, name, uid)
	}
	_, _, nodes2 := run(true)
	if diff := cmp.Diff(nodes1, nodes2); diff != "" || len(nodes1) != 3 || slices.Contains(nodes1, uid) {
		t.Errorf("node UIDs %v, then %v: want three, the same for one seed, unlike the pod's", nodes1, nodes2)
	}
}
