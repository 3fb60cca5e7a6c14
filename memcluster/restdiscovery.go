package memcluster

import (
	"encoding/json"
	"net/http"
	goruntime "runtime"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// The discovery documents are the legacy (unaggregated) ones: /api,
// /api/v1, /apis, /apis/<group> and /apis/<group>/<version>. Clients that
// ask for aggregated discovery first (client-go's discovery client does)
// get these instead, which they detect by the Content-Type and read as
// kube-apiserver's legacy documents.

// resourceVerbs are the verbs of every kind; subresourceVerbs those of its
// status and scale subresources.
func resourceVerbs() metav1.Verbs {
	return metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

func subresourceVerbs() metav1.Verbs { return metav1.Verbs{"get", "patch", "update"} }

// serveVersion answers /version with the Kubernetes release whose
// behaviour memcluster follows.
func serveVersion(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, nil, representation{}, methodNotAllowed(r.Method, r.URL.Path))
		return
	}
	v := version.Info{
		Major: "1", Minor: "37", GitVersion: "v1.37.1+memcluster", GitTreeState: "clean", Compiler: "gc",
		GoVersion: goruntime.Version(), Platform: goruntime.GOOS + "/" + goruntime.GOARCH,
	}
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, nil, representation{}, err)
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	_, _ = w.Write(b) // the client went away: nothing left to tell it
}

func (a *api) serveDiscovery(w http.ResponseWriter, r *http.Request, segs []string) {
	rep, err := a.negotiate(r.Header.Get("Accept"), false, true)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	if r.Method != http.MethodGet {
		writeError(w, a, rep, methodNotAllowed(r.Method, r.URL.Path))
		return
	}
	var doc runtime.Object
	switch {
	case len(segs) == 1 && segs[0] == "api":
		doc = &metav1.APIVersions{
			Versions:                   []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
		}
	case len(segs) == 1:
		doc = &metav1.APIGroupList{Groups: a.groups()}
	case segs[0] == "apis" && len(segs) == 2:
		for _, g := range a.groups() {
			if g.Name == segs[1] {
				doc = &g
			}
		}
	case segs[0] == "api":
		if l := a.resourceList(schema.GroupVersion{Version: segs[1]}); l != nil {
			doc = l
		}
	default:
		if l := a.resourceList(schema.GroupVersion{Group: segs[1], Version: segs[2]}); l != nil {
			doc = l
		}
	}
	if doc == nil {
		writeError(w, a, rep, a.unservedGroup(segs))
		return
	}
	a.writeObject(w, rep, restInfo{gvk: schema.GroupVersionKind{Version: "v1"}}, http.StatusOK, doc)
}

// groups lists the named API groups in the order their first kind was
// added, each with its versions, newest first.
func (a *api) groups() []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, in := range a.order {
		g := in.gvk.Group
		if g == "" {
			continue
		}
		i := slices.IndexFunc(out, func(x metav1.APIGroup) bool { return x.Name == g })
		if i < 0 {
			out = append(out, metav1.APIGroup{Name: g})
			i = len(out) - 1
		}
		gv := metav1.GroupVersionForDiscovery{GroupVersion: in.gvk.GroupVersion().String(), Version: in.gvk.Version}
		if !slices.Contains(out[i].Versions, gv) {
			out[i].Versions = append(out[i].Versions, gv)
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Versions, func(x, y metav1.GroupVersionForDiscovery) int {
			return version.CompareKubeAwareVersionStrings(y.Version, x.Version)
		})
		out[i].PreferredVersion = out[i].Versions[0]
	}
	return out
}

// resourceList is the discovery document of one group version, or nil.
func (a *api) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	var res []metav1.APIResource
	for _, in := range a.order {
		if in.gvk.GroupVersion() != gv {
			continue
		}
		ns := !in.clusterScoped
		singular := in.singular
		if singular == "" {
			singular = strings.ToLower(in.gvk.Kind)
		}
		res = append(res, metav1.APIResource{
			Name: in.resource, SingularName: singular, Namespaced: ns, Kind: in.gvk.Kind, Verbs: resourceVerbs(),
			ShortNames: in.shortNames, Categories: in.categories,
		})
		if in.status {
			res = append(res, metav1.APIResource{Name: in.resource + "/status", Namespaced: ns, Kind: in.gvk.Kind, Verbs: subresourceVerbs()})
		}
		if hasScale(in) {
			res = append(res, metav1.APIResource{Name: in.resource + "/scale", Namespaced: ns, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: subresourceVerbs()})
		}
		switch in.gvk {
		case corev1.SchemeGroupVersion.WithKind("Pod"):
			res = append(res, metav1.APIResource{Name: "pods/eviction", Namespaced: true, Group: "policy", Version: "v1", Kind: "Eviction", Verbs: metav1.Verbs{"create"}})
		case corev1.SchemeGroupVersion.WithKind("Namespace"):
			res = append(res, metav1.APIResource{Name: "namespaces/finalize", Kind: "Namespace", Verbs: metav1.Verbs{"update"}})
		}
	}
	if res == nil && (gv.Group != "" || gv.Version != "v1") {
		return nil
	}
	return &metav1.APIResourceList{GroupVersion: gv.String(), APIResources: res}
}

// unservedGroup is the answer to a discovery request for a group or group
// version the cluster does not serve.
func (a *api) unservedGroup(segs []string) error {
	gv := schema.GroupVersion{Version: segs[len(segs)-1]}
	if segs[0] == "apis" {
		gv.Group = segs[1]
	}
	what := "API group version " + gv.String()
	if segs[0] == "apis" && len(segs) == 2 {
		gv.Version, what = "", "API group "+gv.Group
	}
	builtin := slices.ContainsFunc(builtins, func(b builtin) bool {
		return b.gvk.Group == gv.Group && (gv.Version == "" || b.gvk.Version == gv.Version)
	})
	var served []schema.GroupVersionKind
	for _, in := range a.order {
		if in.gvk.Group == gv.Group && gv.Version != "" {
			served = append(served, in.gvk)
		}
	}
	return unservedError(gv, "", what, served, builtin)
}
