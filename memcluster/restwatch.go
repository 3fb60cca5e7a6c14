package memcluster

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
)

// serveWatch streams the events of a watch as kube-apiserver does: a 200
// response whose body is a sequence of metav1.WatchEvent frames (JSON
// objects one after the other, or length-delimited protobuf), each
// carrying its object encoded in full; a failure after the stream has
// started (410 Expired for a compacted resourceVersion) is an ERROR
// event. The stream ends when the client goes away (the request's
// context), or when the cluster ends the watch (a watcher too slow for
// its buffer, a dropped watch): the client must watch again from the last
// resourceVersion it saw.
//
// With sendInitialEvents=true (client-go's WatchList, on by default since
// 1.35) the stream starts with the current state as ADDED events and a
// BOOKMARK annotated "k8s.io/initial-events-end" at its resourceVersion.
// timeoutSeconds is ignored: a watch lasts as long as its client wants,
// so that watch restarts do not depend on (virtual) time.
func (a *api) serveWatch(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	rep, err := a.negotiate(r.Header.Get("Accept"), false, s.in.protobuf)
	if err == nil && rep.info.StreamSerializer == nil {
		err = notAcceptable([]string{mediaJSON, runtime.ContentTypeProtobuf})
	}
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	opts, err := a.listOptions(r.URL.Query())
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	ctx := r.Context()
	initial, wi, err := s.watchList(ctx, rq.namespace, opts)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	defer func() {
		// End the watch before the request: its goroutine is gone, and the
		// cluster has forgotten it, when the handler returns.
		wi.Stop()
		for range wi.ResultChan() {
		}
	}()

	ct := rep.contentType()
	if rep.info.MediaType != mediaJSON {
		ct += ";stream=watch"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	flush := func() {}
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
	}
	flush()
	enc := streaming.NewEncoder(rep.info.StreamSerializer.Framer.NewFrameWriter(w), rep.info.StreamSerializer.Serializer)
	embedded := representation{info: rep.info, partial: rep.partial}
	send := func(ev watch.Event) bool {
		if s.in.watchEvent != nil && ev.Type != watch.Error {
			ev = s.in.watchEvent(ev)
		}
		obj, er := ev.Object, embedded
		if ev.Type == watch.Error {
			er.partial = false
		}
		raw, err := a.encodeBytes(er, s.in.gvk.GroupVersion(), obj)
		if err != nil {
			st := apiStatus(err)
			raw, err = a.encodeBytes(representation{info: rep.info}, metav1.Unversioned, &st)
			if err != nil {
				return false
			}
			ev.Type = watch.Error
		}
		if err := enc.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			return false // the client went away
		}
		flush()
		return true
	}
	for _, ev := range initial {
		if !send(ev) {
			return
		}
	}
	for {
		select {
		case ev, ok := <-wi.ResultChan():
			if !ok || !send(ev) {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
