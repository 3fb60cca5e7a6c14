package clustertest

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// withoutWatchList answers watch requests that ask for the initial events
// (client-go's watch-list, on by default) as a kube-apiserver without the
// WatchList feature does, so that informers list and then watch.
//
// The reason is determinism: client-go collects a watch-list's initial
// events in a map and hands them to the informer in the map's random
// order, so a controller's queue would start in a different order on
// every run. A list keeps the server's order (by namespace and name).
type withoutWatchList struct{ next http.Handler }

func (h withoutWatchList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" || q.Get("sendInitialEvents") != "true" {
		h.next.ServeHTTP(w, r)
		return
	}
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Reason:   metav1.StatusReasonBadRequest,
		Code:     http.StatusBadRequest,
		Message:  "sendInitialEvents is not supported by the clustertest API server: list, then watch",
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(st)
}
