package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// root is the module's root, seen from this package's directory.
const root = "../.."

// loadSchema parses graph's schema files, and extra after them.
func loadSchema(t *testing.T, extra string) *ast.Schema {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "graph", "*.graphqls"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no schema files: %v", err)
	}
	var sources []*ast.Source
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, &ast.Source{Name: p, Input: string(src)})
	}
	if extra != "" {
		sources = append(sources, &ast.Source{Name: "extra.graphqls", Input: extra})
	}
	schema, err := gqlparser.LoadSchema(sources...)
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

// Ensure the committed files are what the schema generates: a schema edited without go
// generate fails here.
func TestSchemaFieldsAreGenerated(t *testing.T) {
	files, err := schemaFields(loadSchema(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what the schema generates: run go generate ./graph", name)
		}
	}
}

// Ensure a field added to Message in the schema needs nothing but the generation to be carried:
// the files generated from the schema with one more field replace the committed ones (go's
// -overlay), and with no other change the message's type holds the field, its writer writes
// it, and a remembered conversation node may select it.
func TestANewMessageFieldIsCarried(t *testing.T) {
	files, err := schemaFields(loadSchema(t, `extend type Message { extraNote: String }`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	overlay := map[string]string{}
	place := func(name string, src []byte) {
		t.Helper()
		abs, err := filepath.Abs(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, strings.ReplaceAll(name, "/", "_"))
		if err := os.WriteFile(tmp, src, 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[abs] = tmp
	}
	for name, src := range files {
		place(name, src)
	}
	place("graph/model/extra_note_test.go", []byte(`package model

import (
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

func TestExtraNoteIsWritten(t *testing.T) {
	note := "hello"
	f := graphql.CollectedField{Field: &ast.Field{Name: "extraNote", Alias: "extraNote"}}
	b, err := appendMessage(nil, nil, []graphql.CollectedField{f}, &Message{ExtraNote: &note})
	if err != nil || string(b) != `+"`"+`{"extraNote":"hello"}`+"`"+` {
		t.Fatalf("wrote %s, %v", b, err)
	}
}
`))
	place("graph/extra_note_test.go", []byte(`package graph

import "testing"

func TestExtraNoteIsRemembered(t *testing.T) {
	if !rememberedFields["Message"]["extraNote"] {
		t.Fatal("a remembered node may not select Message.extraNote")
	}
}
`))
	spec, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-count=1", "-overlay="+overlayFile, "-run=TestExtraNoteIs", "./graph/model", "./graph")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with Message.extraNote in the schema: %v\n%s", err, out)
	}
	for _, pkg := range []string{"graph/model", "graph"} {
		if !strings.Contains(string(out), "ok  \tgithub.com/msggate/msggate/"+pkg+"\t") {
			t.Errorf("%s's test did not run:\n%s", pkg, out)
		}
	}
}

// Ensure the generator refuses what it cannot write rather than writing something else: a
// field with arguments on a type whose writer is generated, and a remembered field the schema
// does not have.
func TestSchemaFieldsRefuseWhatTheyCannotWrite(t *testing.T) {
	if _, err := schemaFields(loadSchema(t, `extend type Message { excerpt(length: Int): String }`)); err == nil ||
		!strings.Contains(err.Error(), "Message.excerpt takes arguments") {
		t.Errorf("a Message field with arguments: %v", err)
	}
	saved := remembered["Conversation"]
	remembered["Conversation"] = append([]string{"pinned"}, saved...)
	defer func() { remembered["Conversation"] = saved }()
	if _, err := schemaFields(loadSchema(t, "")); err == nil || !strings.Contains(err.Error(), "Conversation.pinned") {
		t.Errorf("a remembered field the schema lacks: %v", err)
	}
}
