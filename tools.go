//go:build tools

// This file pins gqlgen's command (go tool gqlgen), beside the tool line in go.mod: go mod tidy
// keeps what a file imports, under any build tag. go generate ./... runs graph/gqlgen, which
// calls gqlgen's generation as a library.
package main

import _ "github.com/99designs/gqlgen"
