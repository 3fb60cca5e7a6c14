package memcluster

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	internalvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func (a *api) serveGet(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	rep, err := a.negotiate(r.Header.Get("Accept"), false, s.in.protobuf)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	obj, err := s.get(r.Context(), rq.namespace, rq.name)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	a.writeObject(w, rep, s.in, http.StatusOK, obj)
}

func (a *api) serveList(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	rep, err := a.negotiate(r.Header.Get("Accept"), true, s.in.protobuf)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	if s.in.newList == nil && !rep.partial {
		rep.info = a.info(mediaJSON)
	}
	opts, err := a.listOptions(r.URL.Query())
	if err == nil {
		err = validateList(opts)
	}
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	items, lm, err := s.list(r.Context(), rq.namespace, opts)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	list, err := newList(s.in, items, lm.ResourceVersion)
	if !builtinKind(func(b builtin) bool { return b.gvk == s.in.gvk }) {
		lm.ShardInfo = nil // kube-apiserver serves other kinds as custom resources, in unstructured lists with no shardInfo
	}
	if err == nil {
		err = setListMeta(list, lm)
	}
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	a.writeObject(w, rep, s.in, http.StatusOK, list)
}

func (a *api) serveCreate(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	rep, obj, err := a.readObject(r, s)
	var opts metav1.CreateOptions
	if err == nil {
		err = a.writeOptions(r, &opts)
		opts.FieldManager = requestManager(opts.FieldManager, r)
	}
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	out, err := s.create(r.Context(), rq.namespace, obj, opts)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	a.writeObject(w, rep, s.in, http.StatusCreated, out)
}

func (a *api) serveUpdate(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	rep, obj, err := a.readObject(r, s)
	var opts metav1.UpdateOptions
	if err == nil {
		err = a.writeOptions(r, &opts)
		opts.FieldManager = requestManager(opts.FieldManager, r)
	}
	if err == nil {
		err = checkNames(obj, rq)
	}
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	out, err := s.update(r.Context(), rq.namespace, obj, rq.subresource, opts)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	a.writeObject(w, rep, s.in, http.StatusOK, out)
}

func (a *api) servePatch(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	rep, err := a.negotiate(r.Header.Get("Accept"), false, s.in.protobuf)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	pt, data, err := readPatch(r)
	var opts metav1.PatchOptions
	if err == nil {
		err = a.writeOptions(r, &opts)
	}
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	if pt != types.ApplyYAMLPatchType { // an apply names its manager
		opts.FieldManager = requestManager(opts.FieldManager, r)
	}
	out, created, err := s.patch(r.Context(), rq.namespace, rq.name, pt, data, rq.subresource, opts)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	a.writeObject(w, rep, s.in, code, out)
}

func (a *api) serveDelete(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	rep, err := a.negotiate(r.Header.Get("Accept"), false, s.in.protobuf)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	opts, err := a.deleteOptions(r)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	obj, gone, err := s.remove(r.Context(), rq.namespace, rq.name, opts)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	if !gone {
		// Still there, being deleted gracefully or held by finalizers: the
		// object, with 202 only if the client asked not to orphan (as
		// kube-apiserver keeps for compatibility).
		code := http.StatusOK
		if o := opts.OrphanDependents; o != nil && !*o {
			code = http.StatusAccepted
		}
		a.writeObject(w, rep, s.in, code, obj)
		return
	}
	if returnsDeletedObject[schema.GroupResource{Group: s.in.gvk.Group, Resource: s.in.resource}] {
		a.writeObject(w, rep, s.in, http.StatusOK, obj)
		return
	}
	a.writeStatusSuccess(w, rep, s.in, rq.name, obj)
}

// serveDeleteCollection deletes every object a list with the request's
// selectors returns, each as a delete with the request's options.
func (a *api) serveDeleteCollection(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	rep, err := a.negotiate(r.Header.Get("Accept"), false, s.in.protobuf)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	lopts, err := a.listOptions(r.URL.Query())
	if err == nil {
		err = validateList(lopts)
	}
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	dopts, err := a.deleteOptions(r)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	items, _, err := s.list(r.Context(), rq.namespace, lopts)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	for _, it := range items {
		m := it.(Object)
		if _, _, err := s.remove(r.Context(), m.GetNamespace(), m.GetName(), dopts); err != nil && !apierrors.IsNotFound(err) {
			writeError(w, a, rep, err)
			return
		}
	}
	a.writeStatusSuccess(w, rep, s.in, "", nil)
}

// readObject negotiates the response and decodes the request body as an
// object of the served kind.
func (a *api) readObject(r *http.Request, s *served) (representation, runtime.Object, error) {
	rep, err := a.negotiate(r.Header.Get("Accept"), false, s.in.protobuf)
	if err != nil {
		return rep, nil, err
	}
	if err := unsupportedOptions(r.URL.Query()); err != nil {
		return rep, nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return rep, nil, err
	}
	obj, err := a.decode(r.Header.Get("Content-Type"), body, s.in.gvk, s.in.newObj())
	return rep, obj, err
}

// checkNames refuses an update whose object names another object than
// the URL, as kube-apiserver does; an empty namespace is the URL's.
func checkNames(obj runtime.Object, rq request) error {
	m := obj.(Object)
	if m.GetName() != rq.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), rq.name))
	}
	if ns := m.GetNamespace(); ns != "" && ns != rq.namespace {
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the URL (%s)", ns, rq.namespace))
	}
	if rq.namespace != "" {
		m.SetNamespace(rq.namespace)
	}
	return nil
}

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	if len(b) > maxBody {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBody))
	}
	return b, nil
}

// readPatch returns the patch type and body of a PATCH request.
func readPatch(r *http.Request) (types.PatchType, []byte, error) {
	if err := unsupportedOptions(r.URL.Query()); err != nil {
		return "", nil, err
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		mt = r.Header.Get("Content-Type")
	}
	pt := types.PatchType(mt)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
	default:
		// As kube-apiserver's router answers a patch of another type,
		// application/apply-patch+cbor included (kube-apiserver v1.37's
		// CBORServingAndStorage feature is off by default).
		return "", nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: "415: Unsupported Media Type",
		}}
	}
	body, err := readBody(r)
	if err != nil {
		return "", nil, err
	}
	if len(body) == 0 {
		return "", nil, apierrors.NewBadRequest("the patch is empty")
	}
	return pt, body, nil
}

// writeOptions decodes the options of a create, update or patch (into
// a *metav1.CreateOptions, UpdateOptions or PatchOptions) from the
// query, with apimachinery's parameter codec.
func (a *api) writeOptions(r *http.Request, into runtime.Object) error {
	if err := runtime.NewParameterCodec(a.scheme).DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// requestManager is the field manager of a request: its fieldManager
// parameter, else the prefix of its User-Agent, else "unknown", as
// kube-apiserver names it.
func requestManager(fieldManager string, r *http.Request) string {
	if fieldManager != "" {
		return fieldManager
	}
	if m := userAgentManager(r.UserAgent()); m != "" {
		return m
	}
	return "unknown"
}

// listOptions decodes the query of a list or watch with apimachinery's
// parameter codec, and refuses what memcluster cannot answer honestly.
func (a *api) listOptions(q url.Values) (metav1.ListOptions, error) {
	var opts metav1.ListOptions
	if err := runtime.NewParameterCodec(a.scheme).DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
		return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid list options: %v", err))
	}
	return opts, nil
}

// validateList refuses list options kube-apiserver refuses, with its
// errors (the resourceVersion semantics are the store's: see paginate.go).
func validateList(opts metav1.ListOptions) error {
	errs := internalvalidation.ValidateListOptions(&metainternalversion.ListOptions{
		ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: opts.ResourceVersionMatch,
		Continue: opts.Continue, Limit: opts.Limit, SendInitialEvents: opts.SendInitialEvents,
	}, true)
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return nil
}

// setListMeta sets a list's continue token, remaining count and shard
// info.
func setListMeta(list runtime.Object, lm metav1.ListMeta) error {
	la, err := meta.ListAccessor(list)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	la.SetContinue(lm.Continue)
	la.SetRemainingItemCount(lm.RemainingItemCount)
	if sl, ok := list.(metav1.ShardedListInterface); ok {
		sl.SetShardInfo(lm.ShardInfo)
	}
	return nil
}

// unsupportedOptions refuses dry runs, which memcluster would otherwise
// carry out for real.
func unsupportedOptions(q url.Values) error {
	if len(q["dryRun"]) > 0 {
		return apierrors.NewBadRequest("memcluster does not support dryRun")
	}
	return nil
}

// deleteOptions reads DeleteOptions from the body (as clients send them)
// or else from the query.
func (a *api) deleteOptions(r *http.Request) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	if err := unsupportedOptions(r.URL.Query()); err != nil {
		return opts, err
	}
	body, err := readBody(r)
	if err != nil {
		return opts, err
	}
	if len(body) > 0 {
		if _, err := a.decode(r.Header.Get("Content-Type"), body, metav1.SchemeGroupVersion.WithKind("DeleteOptions"), &opts); err != nil {
			return opts, err
		}
	} else if err := runtime.NewParameterCodec(a.scheme).DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid delete options: %v", err))
	}
	if len(opts.DryRun) > 0 {
		return opts, apierrors.NewBadRequest("memcluster does not support dryRun")
	}
	return opts, nil
}

// writeObject answers obj with code.
func (a *api) writeObject(w http.ResponseWriter, rep representation, in restInfo, code int, obj runtime.Object) {
	body, err := a.encodeBytes(rep, in.gvk.GroupVersion(), obj)
	if err != nil {
		writeError(w, a, rep, apierrors.NewInternalError(err))
		return
	}
	ct := rep.contentType()
	if rep.partial && meta.IsListType(obj) {
		ct += "List"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
	_, _ = w.Write(body) // the client went away: nothing left to tell it
}

// writeStatusSuccess answers a delete that removed the object.
func (a *api) writeStatusSuccess(w http.ResponseWriter, rep representation, in restInfo, name string, obj runtime.Object) {
	st := &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{Name: name, Group: in.gvk.Group, Kind: in.resource}}
	if m, ok := obj.(Object); ok {
		st.Details.UID = m.GetUID()
	}
	rep.partial = false
	a.writeObject(w, rep, in, http.StatusOK, st)
}
