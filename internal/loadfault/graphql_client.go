package loadfault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// call posts one request to baseURL's /query and decodes its data into out. It returns "" when
// the answer has data and no error; otherwise the failure's code (the first GraphQL error's
// extensions.code, HTTP_<status>, TRANSPORT or TIMEOUT) and an error saying what happened.
func (c *graphQLClient) call(ctx context.Context, baseURL, token, query string, vars map[string]any, out any) (string, error) {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return codeGraphQL, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/query", bytes.NewReader(body))
	if err != nil {
		return codeGraphQL, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		var ne interface{ Timeout() bool }
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return codeTimeout, err
		}
		return codeTransport, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return codeTransport, err
	}
	var answer struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return fmt.Sprintf("HTTP_%d", resp.StatusCode), fmt.Errorf("%s: %.200s", resp.Status, raw)
	}
	if len(answer.Errors) > 0 {
		code := answer.Errors[0].Extensions.Code
		if code == "" {
			code = codeGraphQL
		}
		return code, errors.New(answer.Errors[0].Message)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("HTTP_%d", resp.StatusCode), fmt.Errorf("%s: %.200s", resp.Status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(answer.Data, out); err != nil {
			return codeGraphQL, fmt.Errorf("decoding the data: %w", err)
		}
	}
	return "", nil
}
