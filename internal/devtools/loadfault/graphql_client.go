package loadfault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Failure codes for answers that carry no GraphQL error code.
const (
	codeTransport = "TRANSPORT" // no answer: connection refused or reset, the process gone
	codeTimeout   = "TIMEOUT"   // no answer within the request timeout
	codeGraphQL   = "GRAPHQL"   // a GraphQL error without extensions.code
)

// requestTimeout bounds one request of the load.
const requestTimeout = 15 * time.Second

// graphQLClient posts GraphQL requests to the gateways, as an app would.
type graphQLClient struct {
	http *http.Client
}

func newGraphQLClient() *graphQLClient {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 512
	return &graphQLClient{http: &http.Client{Transport: t, Timeout: requestTimeout}}
}

// reply is how the gateway answered one request: code is "" when the answer has data and no
// error; otherwise the failure's code (the first GraphQL error's extensions.code, HTTP_<status>,
// TRANSPORT or TIMEOUT). retryAfter is the gateway's hint (extensions.retryAfterMs, else the
// Retry-After header).
type reply struct {
	code       string
	status     int
	retryAfter time.Duration
}

// refused reports whether the gateway refused the request for now instead of failing it: 503
// or 429, or UNAVAILABLE or LIMIT_EXCEEDED with a retry hint. Nothing was done; the same
// request may be sent again after the hint. (The contract is syncclient.IsRefusal's.)
func (r reply) refused() bool {
	switch {
	case r.code == "":
		return false
	case r.status == http.StatusServiceUnavailable, r.status == http.StatusTooManyRequests:
		return true
	}
	return r.retryAfter > 0 && (r.code == "UNAVAILABLE" || r.code == "LIMIT_EXCEEDED")
}

// call posts one request to baseURL's /query and decodes its data into out; the error says
// what went wrong when the reply has a code.
func (c *graphQLClient) call(ctx context.Context, baseURL, token, query string, vars map[string]any, out any) (reply, error) {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return reply{code: codeGraphQL}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/query", bytes.NewReader(body))
	if err != nil {
		return reply{code: codeGraphQL}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		var ne interface{ Timeout() bool }
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return reply{code: codeTimeout}, err
		}
		return reply{code: codeTransport}, err
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode}
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
		r.retryAfter = time.Duration(s) * time.Second
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		r.code = codeTransport
		return r, err
	}
	var answer struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code         string `json:"code"`
				RetryAfterMs int64  `json:"retryAfterMs"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		r.code = fmt.Sprintf("HTTP_%d", resp.StatusCode)
		return r, fmt.Errorf("%s: %.200s", resp.Status, raw)
	}
	if len(answer.Errors) > 0 {
		e := answer.Errors[0]
		r.code = e.Extensions.Code
		if r.code == "" {
			r.code = codeGraphQL
		}
		if e.Extensions.RetryAfterMs > 0 {
			r.retryAfter = time.Duration(e.Extensions.RetryAfterMs) * time.Millisecond
		}
		return r, errors.New(e.Message)
	}
	if resp.StatusCode != http.StatusOK {
		r.code = fmt.Sprintf("HTTP_%d", resp.StatusCode)
		return r, fmt.Errorf("%s: %.200s", resp.Status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(answer.Data, out); err != nil {
			r.code = codeGraphQL
			return r, fmt.Errorf("decoding the data: %w", err)
		}
	}
	return r, nil
}
