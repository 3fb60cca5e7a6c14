package memcluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/memcluster"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The Kubernetes REST API of a cluster, served in-process: a plain
// http.Client with the Transport watches Deployments, creates one, and
// reads the watch event. client-go takes the same Transport in a
// rest.Config: &rest.Config{Host: "http://memcluster", Transport: t}.
func ExampleHandler() {
	c := memcluster.New(memcluster.Config{Clock: clock.NewFake(start), Seed: 1})
	hc := &http.Client{Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}}
	const deployments = "http://memcluster/apis/apps/v1/namespaces/default/deployments"

	watch, err := hc.Get(deployments + "?watch=true")
	if err != nil {
		panic(err)
	}
	defer watch.Body.Close()

	body := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{
		"selector":{"matchLabels":{"app":"web"}},
		"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`
	resp, err := hc.Post(deployments, "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var d appsv1.Deployment
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, d.Kind, d.Name, "resourceVersion", d.ResourceVersion, "replicas", *d.Spec.Replicas)

	var ev struct {
		Type   string
		Object appsv1.Deployment
	}
	if err := json.NewDecoder(watch.Body).Decode(&ev); err != nil {
		panic(err)
	}
	fmt.Println(watch.Header.Get("Content-Type"), ev.Type, ev.Object.Name, "created", ev.Object.CreationTimestamp.UTC())
	// Output:
	// 201 Created Deployment web resourceVersion 2 replicas 1
	// application/json ADDED web created 2026-01-01 00:00:00 +0000 UTC
}

// Gadget is a custom resource's Go type, as kubebuilder generates it.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GadgetSpec   `json:"spec,omitempty"`
	Status            GadgetStatus `json:"status,omitempty"`
}

type GadgetSpec struct {
	Size int `json:"size"`
}

type GadgetStatus struct {
	Ready bool `json:"ready"`
}

type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

func (g *Gadget) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (l *GadgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]Gadget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Gadget)
	}
	return &out
}

// A custom resource from its Go types in a scheme: stored with the
// semantics kube-apiserver gives CRDs (status subresource, generation),
// and served by the Handler like the built-in kinds.
func ExampleKindFor() {
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gv, &Gadget{}, &GadgetList{})
	metav1.AddToGroupVersion(scheme, gv)

	c := memcluster.New(memcluster.Config{Clock: clock.NewFake(start), Seed: 1})
	kind, err := memcluster.KindFor(scheme, &Gadget{}, memcluster.KindOptions{})
	if err != nil {
		panic(err)
	}
	gadgets := memcluster.NewResource(c, kind).Namespace("default")
	ctx := context.Background()
	g, err := gadgets.Create(ctx, &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: GadgetSpec{Size: 1}}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	g.Spec.Size, g.Status.Ready = 2, true // Update keeps the stored status
	if g, err = gadgets.Update(ctx, g, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
	fmt.Println(kind.Resource, "generation", g.Generation, "ready", g.Status.Ready)
	g.Status.Ready = true
	if g, err = gadgets.UpdateStatus(ctx, g, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
	fmt.Println(kind.Resource, "generation", g.Generation, "ready", g.Status.Ready)

	hc := &http.Client{Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}}
	resp, err := hc.Get("http://memcluster/apis/example.com/v1/namespaces/default/gadgets")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var list GadgetList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, list.Kind, len(list.Items), "item at resourceVersion", list.ResourceVersion)
	// Output:
	// gadgets generation 2 ready false
	// gadgets generation 2 ready true
	// 200 OK GadgetList 1 item at resourceVersion 4
}
