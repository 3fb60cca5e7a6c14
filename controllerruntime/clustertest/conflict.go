package clustertest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/ctrlkit/ctrlkit/internal/gate"
)

// otherWriter is the client that changes objects for PerturbConflict,
// and the annotation it changes.
const (
	otherWriter           = "other-writer"
	otherWriterAnnotation = "clustertest.ctrlkit.dev/other-writer"
)

// ungatedKey marks the context of the other writer's request: it passes
// the scheduler's gate at once, so that it lands before the step it
// beats.
type ungatedKey struct{}

// keyText is "ns/name", or "name" for a cluster-scoped object.
func keyText(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// conflictWrite changes the object of st (a request about to be served)
// as another writer would: a merge patch of an annotation, which moves its
// resourceVersion on. It runs in a goroutine of its own; the scheduler
// waits for it before the next step.
func (c *Cluster) conflictWrite(st gate.Step) {
	c.rec.mu.Lock()
	obj := c.rec.objs[st.Resource][types.NamespacedName{Namespace: st.Namespace, Name: st.Name}]
	c.rec.mu.Unlock()
	if obj == nil {
		c.rec.note(fmt.Sprintf("%s: no %s %s to change", otherWriter, st.Resource, keyText(st.Namespace, st.Name)))
		return
	}
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		c.rec.note(fmt.Sprintf("%s: %v", otherWriter, err))
		return
	}
	c.otherMu.Lock()
	if c.other == nil {
		c.other, err = dynamic.NewForConfig(namedConfig(c.cfg, otherWriter))
	}
	dyn := c.other
	c.otherN++
	n := c.otherN
	c.otherMu.Unlock()
	if err != nil {
		c.rec.note(fmt.Sprintf("%s: %v", otherWriter, err))
		return
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"%d"}}}`, otherWriterAnnotation, n)
	ctx := context.WithValue(c.ctx, ungatedKey{}, true)
	res := dyn.Resource(gvk.GroupVersion().WithResource(st.Resource))
	if st.Namespace != "" {
		_, err = res.Namespace(st.Namespace).Patch(ctx, st.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: otherWriter})
	} else {
		_, err = res.Patch(ctx, st.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: otherWriter})
	}
	if err != nil && c.ctx.Err() == nil {
		c.rec.note(fmt.Sprintf("%s: patch of %s %s: %v", otherWriter, st.Resource, keyText(st.Namespace, st.Name), err))
	}
}
