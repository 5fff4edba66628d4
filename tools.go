//go:build tools

// This file pins gqlgen, which `go generate ./...` runs (graph/generate.go), beside the tool
// line in go.mod: go mod tidy keeps what a file imports, under any build tag.
package main

import _ "github.com/99designs/gqlgen"
