package server

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/graph"
)

// postTransport is GraphQL over HTTP POST with a JSON body. It answers as gqlgen's POST
// transport does (the content type the Accept header asks for, the status codes the
// GraphQL-over-HTTP draft gives each kind of error), but writes the executor's data as it is:
// gqlgen's writer passes the whole response through encoding/json, which scans, validates
// and compacts the data a second time: work the executor already did, and a large part of a
// warm page's cost (docs/performance.md, the read path's fourth step).
type postTransport struct{}

const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

var _ graphql.Transport = postTransport{}

func (postTransport) Supports(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get("Upgrade") != "" {
		return false
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mediaType == mediaJSON
}

func (postTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	contentType := responseMediaType(r.Header.Get("Accept"))
	w.Header().Set("Content-Type", contentType)
	start := graphql.Now()
	body, err := readBody(r.Body)
	if err != nil {
		writeResponse(w, exec.DispatchError(ctx, gqlerror.List{gqlerror.Errorf("could not read request body: %v", err)}))
		return
	}
	var params graphql.RawParams
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeResponse(w, exec.DispatchError(ctx, gqlerror.List{gqlerror.Errorf("json request body could not be decoded: %v", err)}))
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	rc, opErr := exec.CreateOperationContext(ctx, &params)
	if opErr != nil {
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, rc), opErr)
		if retry, ok := unavailableStatus(resp); ok {
			setRetryAfter(w, retry)
			w.WriteHeader(http.StatusServiceUnavailable)
		} else {
			w.WriteHeader(requestErrorStatus(contentType, opErr))
		}
		writeResponse(w, resp)
		return
	}
	if rc.Operation != nil && rc.Operation.Operation == ast.Subscription {
		// A subscription answers events for as long as it lives: one HTTP answer cannot carry
		// it, and the request would hang until the first event.
		w.WriteHeader(http.StatusBadRequest)
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), gqlerror.List{{
			Message:    "subscriptions are served over WebSocket (graphql-transport-ws) at this URL, not over HTTP POST",
			Extensions: map[string]any{"code": graph.CodeUnsupported},
		}}))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	resp := responses(ctx)
	// An answer that is nothing but "a store is unavailable" says so in its status too, so
	// that clients and proxies that look only at the status back off for the hint's time.
	if retry, ok := unavailableStatus(resp); ok {
		setRetryAfter(w, retry)
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	writeResponse(w, resp)
}

// responseMediaType picks the answer's media type from the Accept header: the first of JSON
// and GraphQL response JSON it names (a wildcard meaning JSON), JSON when there is none,
// GraphQL response JSON when it names neither.
func responseMediaType(accept string) string {
	if accept == "" {
		return mediaJSON
	}
	for part := range strings.SplitSeq(accept, ",") {
		mediaType, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mediaType {
		case "*/*", "application/*", mediaJSON:
			return mediaJSON
		case mediaGraphQLResponse:
			return mediaGraphQLResponse
		}
	}
	return mediaGraphQLResponse
}

// requestErrorStatus is the status of a request that failed before execution: a protocol
// error (unparsable, invalid) is 422 in JSON and 400 in GraphQL response JSON; others 200.
func requestErrorStatus(contentType string, errs gqlerror.List) int {
	if errcode.GetErrorKind(errs) != errcode.KindProtocol {
		return http.StatusOK
	}
	if contentType == mediaGraphQLResponse {
		return http.StatusBadRequest
	}
	return http.StatusUnprocessableEntity
}

// responseBuffers holds the buffers answers are put together in, so that a page's answer does
// not cost an allocation of its size.
var responseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// writeResponse writes r as graphql.Response's JSON form, with its data copied as is: the
// executor wrote it and it is valid JSON. Only the small parts go through encoding/json.
func writeResponse(w io.Writer, r *graphql.Response) {
	p := responseBuffers.Get().(*[]byte)
	b := slices.Grow((*p)[:0], len(r.Data)+128)
	b = append(b, '{')
	field := func(name string, v any) bool {
		enc, err := json.Marshal(v)
		if err != nil {
			return false
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b = append(b, enc...)
		b = append(b, ',')
		return true
	}
	ok := true
	if len(r.Errors) > 0 {
		ok = field("errors", r.Errors)
	}
	b = append(b, `"data":`...)
	if len(r.Data) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, r.Data...)
	}
	b = append(b, ',')
	if r.Label != "" {
		ok = ok && field("label", r.Label)
	}
	if len(r.Path) > 0 {
		ok = ok && field("path", r.Path)
	}
	if r.HasNext != nil {
		ok = ok && field("hasNext", *r.HasNext)
	}
	if len(r.Extensions) > 0 {
		ok = ok && field("extensions", r.Extensions)
	}
	if !ok {
		// Something an extension or error added cannot be encoded: say so rather than
		// answer broken JSON.
		b = append(b[:0], `{"errors":[{"message":"internal error: the answer could not be encoded","extensions":{"code":"INTERNAL"}}],"data":null,`...)
	}
	b[len(b)-1] = '}'
	_, _ = w.Write(b)
	if cap(b) <= 1<<20 { // a huge answer's buffer is not kept
		*p = b[:0]
		responseBuffers.Put(p)
	}
}
