package clustertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/ctrlkit/ctrlkit/internal/gate"
)

// precondition reads the resourceVersion an update (PUT) or a patch
// carries in its body (metadata.resourceVersion), the precondition
// kube-apiserver checks against the stored object; "" for none. The body
// is left for the handler to read.
func precondition(r *http.Request) string {
	if r.Body == nil || (r.Method != http.MethodPut && r.Method != http.MethodPatch) {
		return ""
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.Contains(ct, "protobuf"):
		return protobufResourceVersion(body)
	case strings.Contains(ct, "yaml"):
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return ""
		}
	case ct == string(types.JSONPatchType):
		var ops []struct {
			Op    string          `json:"op"`
			Path  string          `json:"path"`
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal(body, &ops) != nil {
			return ""
		}
		rv := ""
		for _, op := range ops {
			if op.Path == "/metadata/resourceVersion" && (op.Op == "add" || op.Op == "replace" || op.Op == "test") {
				_ = json.Unmarshal(op.Value, &rv)
			}
		}
		return rv
	}
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &obj) != nil {
		return ""
	}
	return obj.Metadata.ResourceVersion
}

// protobufMagic starts kube-apiserver's protobuf encoding of an object.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00} // "k8s\x00"

// protobufResourceVersion reads metadata.resourceVersion from a protobuf
// body: the magic prefix, then a runtime.Unknown whose raw bytes are the
// object's message, whose field 1 is its metadata, as in every kind of
// kube-apiserver's. The rest of the object is skipped, not decoded.
func protobufResourceVersion(body []byte) string {
	rest, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return ""
	}
	var u runtime.Unknown
	if u.Unmarshal(rest) != nil {
		return ""
	}
	var m metav1.PartialObjectMetadata // field 1: metadata; the others skipped
	if m.Unmarshal(u.Raw) != nil {
		return ""
	}
	return m.ResourceVersion
}

// objectRef names a stored object.
type objectRef struct {
	resource string
	key      types.NamespacedName
}

// basis follows, for NoLostUpdates, the newest version of each object
// each client has seen: delivered to one of its watches, read by a get
// or a list, or written by itself.
type basis map[string]map[objectRef]uint64

func (b basis) saw(client string, ref objectRef, rv uint64) {
	m := b[client]
	if m == nil {
		m = map[objectRef]uint64{}
		b[client] = m
	}
	m[ref] = max(m[ref], rv)
}

// stepped is called for every step the scheduler lets through, before
// it happens: what a read or a delivery shows its client.
func (k *checker) stepped(w *waiter) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil || w.client == "" {
		return
	}
	st := w.step
	switch {
	case st.Kind == gate.StepDelivery && st.Event != watch.Deleted && st.Event != watch.Bookmark && st.Event != watch.Error:
		rv, err := strconv.ParseUint(st.ResourceVersion, 10, 64)
		if err == nil {
			k.seen.saw(w.client, objectRef{st.Resource, types.NamespacedName{Namespace: st.Namespace, Name: st.Name}}, rv)
		}
	case st.Kind == gate.StepRequest && st.Verb == gate.VerbGet:
		ref := objectRef{st.Resource, types.NamespacedName{Namespace: st.Namespace, Name: st.Name}}
		if rv, ok := k.stored[ref]; ok {
			k.seen.saw(w.client, ref, rv)
		}
	case st.Kind == gate.StepRequest && st.Verb == gate.VerbList:
		for ref, rv := range k.stored {
			if ref.resource == st.Resource && (st.Namespace == "" || ref.key.Namespace == st.Namespace) {
				k.seen.saw(w.client, ref, rv)
			}
		}
	}
}

// NoStaleWrites fails when the cluster accepts a write based on a stale
// read: an update or patch that carried a resourceVersion (the version
// its writer read) other than the stored object's. kube-apiserver
// answers such a request 409 Conflict; this checks that the API model
// the bench runs on does, for every request of every client through the
// REST API.
func NoStaleWrites() Property {
	return Property{Name: "no stale write accepted", Always: func(s *State) error {
		for _, w := range s.writes {
			if w.Precondition == "" || w.Type != watch.Modified {
				continue
			}
			if w.Precondition != strconv.FormatUint(w.Previous, 10) {
				return fmt.Errorf("%s %s %s by %s accepted with resourceVersion %s, but the stored one was %d",
					w.Verb, w.Resource, keyText(w.Object.GetNamespace(), w.Object.GetName()), w.By, w.Precondition, w.Previous)
			}
		}
		return nil
	}}
}

// NoLostUpdates fails when an update without a resourceVersion (an
// unconditional PUT, which kube-apiserver accepts whatever is stored)
// replaces a version of the object newer than any its writer had seen:
// its content was computed from an older version, and whatever changed
// in between is lost. What a client has seen is every version delivered
// to its watches, read by its gets and lists, or written by itself; a
// client that read a newer version than it based its update on is not
// caught (the check is by client, "manager", not by reconcile). Patches
// are not judged: a merge patch changes only what it names. Opt-in:
// an operator may mean to overwrite (a spec it owns outright).
func NoLostUpdates() Property {
	return Property{Name: "no lost update", needsBasis: true, Always: func(s *State) error {
		for _, w := range s.writes {
			if w.Precondition != "" || w.Type != watch.Modified || w.By == "" ||
				(w.Verb != string(gate.VerbUpdate) && w.Verb != string(gate.VerbUpdateStatus)) {
				continue
			}
			if w.Based == 0 || w.Based >= w.Previous {
				continue
			}
			return fmt.Errorf("%s %s %s by %s without a resourceVersion, computed from version %d at the newest, replaced version %d (written by %s): what changed in between is lost",
				w.Verb, w.Resource, keyText(w.Object.GetNamespace(), w.Object.GetName()), w.By, w.Based, w.Previous, w.PreviousBy)
		}
		return nil
	}}
}
