package memcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Transport is an [http.RoundTripper] that serves every request with
// Handler in the calling process: no socket, no listener, no port. Give it
// to client-go through a rest.Config (the host is only used to build URLs):
//
//	cfg := &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}}
//	clientset, err := kubernetes.NewForConfig(cfg)
//
// The handler runs on a goroutine of its own, with the request's context
// (cancelled when the request's is, or when the client closes the response
// body). The response is returned when the handler returns, with the
// whole body; or, for a handler that streams (a watch), at its first
// Flush, with a body that delivers what it writes as it writes it, until
// it returns. A handler that panics answers 500 with the panic and its
// stack, instead of crashing the process.
type Transport struct {
	Handler http.Handler
}

var _ http.RoundTripper = Transport{}

// RoundTrip serves req.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Handler == nil {
		if req.Body != nil {
			_ = req.Body.Close() // RoundTrip must close it; its error says nothing about the request
		}
		return nil, errors.New("memcluster: Transport has no Handler")
	}
	ctx, cancel := context.WithCancel(req.Context())
	sreq := req.Clone(ctx)
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "memcluster"
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	rw := &responseWriter{req: req, header: http.Header{}, sent: make(chan *http.Response, 1), cancel: cancel}
	go func() {
		defer cancel()
		defer func() {
			rw.finish(recover())
			if req.Body != nil {
				_ = req.Body.Close() // read by the handler already; RoundTrip must close it
			}
		}()
		t.Handler.ServeHTTP(rw, sreq)
	}()
	select {
	case resp := <-rw.sent:
		return resp, nil
	case <-req.Context().Done():
		// The handler ends with the context; whatever it still answers is
		// discarded, so that a streaming handler is not left blocked.
		go func() {
			resp := <-rw.sent
			_ = resp.Body.Close() // nobody reads it
		}()
		return nil, req.Context().Err()
	}
}

// responseWriter buffers a response until the handler returns or flushes;
// from a Flush on it streams through a pipe. It is used by the handler's
// goroutine only, as an http.ResponseWriter is.
type responseWriter struct {
	req     *http.Request
	header  http.Header
	code    int
	buf     bytes.Buffer
	pw      *io.PipeWriter // set at the first Flush
	sent    chan *http.Response
	cancel  context.CancelFunc
	flushed bool
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.pw != nil {
		return w.pw.Write(b)
	}
	return w.buf.Write(b)
}

// Flush sends the response now; what is written later is streamed.
func (w *responseWriter) Flush() {
	if w.flushed {
		return
	}
	w.flushed = true
	w.WriteHeader(http.StatusOK)
	pr, pw := io.Pipe()
	w.pw = pw
	resp := w.response(&streamBody{pr: pr, cancel: w.cancel}, -1)
	w.sent <- resp
	if w.buf.Len() > 0 {
		_, _ = pw.Write(w.buf.Bytes()) // an error means the client closed the body: the handler sees it at its next Write
		w.buf.Reset()
	}
}

// finish completes the response once the handler has returned (or
// panicked with p).
func (w *responseWriter) finish(p any) {
	if p != nil && !w.flushed {
		w.header = http.Header{}
		w.code = 0
		w.buf.Reset()
		msg := fmt.Sprintf("memcluster: the handler panicked: %v\n%s", p, debug.Stack())
		if p == http.ErrAbortHandler {
			msg = "memcluster: the handler aborted the request"
		}
		writeError(w, nil, representation{}, apierrors.NewInternalError(errors.New(msg)))
	}
	if w.flushed {
		if p != nil {
			w.pw.CloseWithError(fmt.Errorf("memcluster: the handler panicked: %v", p))
			return
		}
		w.pw.Close()
		return
	}
	w.WriteHeader(http.StatusOK)
	body := w.buf.Bytes()
	w.header.Set("Content-Length", strconv.Itoa(len(body)))
	w.sent <- w.response(io.NopCloser(bytes.NewReader(body)), int64(len(body)))
}

func (w *responseWriter) response(body io.ReadCloser, length int64) *http.Response {
	if w.req.Method == http.MethodHead {
		body, length = http.NoBody, 0
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)),
		StatusCode:    w.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header.Clone(),
		Body:          body,
		ContentLength: length,
		Request:       w.req,
	}
}

// streamBody is the body of a streamed response: closing it ends the
// handler's context.
type streamBody struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (b *streamBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *streamBody) Close() error {
	b.cancel()
	return b.pr.Close()
}
