// Package graphqltest reads a GraphQL answer, decoded from its JSON, as a client reads it: for
// the tests of graph and of the server, which cannot share a helper through either package.
package graphqltest

import "strings"

// ErrorCodes are the codes (extensions.code) of an answer's errors, comma-separated, in the
// answer's order; an error without a code counts as an empty one.
func ErrorCodes(answer map[string]any) string {
	var codes []string
	errs, _ := answer["errors"].([]any)
	for _, e := range errs {
		ext, _ := e.(map[string]any)["extensions"].(map[string]any)
		code, _ := ext["code"].(string)
		codes = append(codes, code)
	}
	return strings.Join(codes, ",")
}
