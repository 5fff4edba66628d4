package docs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The rules below are the ones README.md ("Imports point down ...") and architecture.md
// ("## Packages") state; a change to one belongs in the other. Paths are relative to the
// module ("." is package main), and a path names the package and every package under it,
// the longest path winning. A rule about a package that does not exist (yet) holds trivially.

// layers lists the product's packages from the top down. A package may import packages of
// its own layer or of a layer below, never one above, and never the tooling.
var layers = []struct {
	name     string
	packages []string
}{
	{"wiring", []string{".", "internal/cli", "internal/gateway"}},
	{"the server", []string{"internal/server"}},
	{"the GraphQL boundary", []string{"graph"}},
	{"the paths", []string{"internal/ingest", "internal/history", "internal/sync", "internal/retention", "internal/openimsync",
		"internal/mention", "internal/search/finder", "internal/search/reindex", "internal/search/openimindex"}},
	{"the adapters", []string{"internal/cache", "internal/chunkstore", "internal/openim", "internal/openimfeed", "internal/embedded", "internal/auth",
		"internal/search/bleveindex", "internal/search/pgindex"}},
	{"the leaves", []string{"internal/im", "internal/admission", "internal/freshstack", "internal/ops", "internal/playground", "syncclient",
		"internal/search", "internal/tracing"}},
}

// tooling is what measures, tests and generates the product; it may import anything, and
// no product package imports it.
var tooling = []string{
	"cmd", "docs", "e2e", "graph/gqlgen",
	"internal/devtools/bench", "internal/devtools/fanout", "internal/devtools/loadfault", "internal/devtools/toolmain",
	"internal/devtools/testenv", "internal/devtools/graphqltest", "internal/gateway/gatewaytest", "internal/openim/openimtest",
	"internal/openimfeed/openimfeedtest", "internal/search/searchtest", "deploy",
}

// importedOnlyBy: the packages whose path starts with imported (exactly the one named, for a
// package of the module) are imported by non-test files only by the packages listed, or by
// any of the tooling where the list holds anyTooling (so that moving the tools touches only
// the tooling list). Test files may import a driver to check a store directly
// (architecture.md says so).
var importedOnlyBy = []struct {
	imported string
	by       []string
}{
	{"go.mongodb.org/mongo-driver", []string{"internal/chunkstore", "internal/openim", anyTooling}},
	{"github.com/redis/go-redis", []string{"internal/cache", "internal/openim", anyTooling}},
	{"github.com/twmb/franz-go", []string{"internal/openimfeed", anyTooling}},
	{"github.com/FerretDB/FerretDB", []string{"internal/embedded"}},
	{"github.com/alicebob/miniredis", []string{"internal/embedded"}},
	{"modernc.org/sqlite", []string{"internal/embedded"}},
	// Only internal/gateway wires the parts: of the product it and the server it wires alone
	// import graph, only it imports the server, and only the commands import it (the tools
	// start gateways of their own).
	{module + "/graph", []string{"internal/gateway", "internal/server", anyTooling}},
	{module + "/internal/server", []string{"internal/gateway", anyTooling}},
	// The server's transports are the only ones (syncclient is a client): graph serves no
	// protocol.
	{"github.com/coder/websocket", []string{"internal/server", "syncclient", anyTooling}},
	{"github.com/99designs/gqlgen/graphql/handler", []string{"internal/server", anyTooling}},
	{module + "/internal/gateway", []string{"internal/cli", anyTooling}},
	{"github.com/blevesearch/bleve", []string{"internal/search/bleveindex"}},
	{"github.com/jackc/pgx", []string{"internal/search/pgindex"}},
	// Tracing's SDK and exporters are set up in one place; the rest take the API's provider.
	{"go.opentelemetry.io/otel/sdk", []string{"internal/tracing", anyTooling}},
	{"go.opentelemetry.io/otel/exporters", []string{"internal/tracing", anyTooling}},
	{"go.opentelemetry.io/contrib", []string{"internal/tracing", anyTooling}},
}

const anyTooling = "(any tooling package)"

// mayImport tells whether a rule's list of importers names a package.
func mayImport(by []string, rel string) bool {
	_, tool := layerOf(rel)
	for _, b := range by {
		if b == anyTooling && tool || rel == b || strings.HasPrefix(rel, b+"/") {
			return true
		}
	}
	return false
}

// importsOnly: these packages import nothing but the standard library and the module's
// packages listed.
var importsOnly = []struct {
	pkg     string
	allowed []string
}{
	{"internal/im", nil},
	{"internal/admission", nil},
	{"internal/search", nil},
	{"internal/history", []string{"internal/im"}},
}

const module = "github.com/msggate/msggate"

// TestImportsFollowTheStatedRules checks the import rules of README.md and architecture.md
// against `go list`.
func TestImportsFollowTheStatedRules(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of the module; expected the whole tree", len(pkgs))
	}
	for _, p := range pkgs {
		from := p.rel()
		fromLayer, fromTool := layerOf(from)
		if fromLayer < 0 && !fromTool {
			t.Errorf("%s is in no layer: add it to layers or tooling in docs/imports_test.go, and a line for it to the package list in docs/architecture.md", from)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp+"/", module+"/") {
				continue
			}
			to := relPath(imp)
			toLayer, toTool := layerOf(to)
			switch {
			case fromTool:
			case toTool:
				t.Errorf("%s (product, %s) imports the tooling package %s", from, layers[fromLayer].name, to)
			case toLayer >= 0 && toLayer < fromLayer:
				t.Errorf("%s (%s) imports %s, which is above it (%s)", from, layers[fromLayer].name, to, layers[toLayer].name)
			}
		}
	}
	for _, rule := range importedOnlyBy {
		for _, p := range pkgs {
			for _, imp := range p.Imports {
				if imports(imp, rule.imported) && !mayImport(rule.by, p.rel()) {
					t.Errorf("%s imports %s; only %s may (docs/architecture.md)", p.rel(), imp, strings.Join(rule.by, ", "))
				}
			}
		}
	}
	standard := standardPackages(t, pkgs)
	for _, rule := range importsOnly {
		for _, p := range pkgs {
			if p.rel() != rule.pkg {
				continue
			}
			for _, imp := range p.Imports {
				if !standard[imp] && !slices.Contains(rule.allowed, relPath(imp)) {
					t.Errorf("%s imports %s; it may import only the standard library and %v (docs/architecture.md)", rule.pkg, imp, rule.allowed)
				}
			}
		}
	}
}

// imports tells whether an import path is the one a rule names: the package itself for the
// module's, any package of the module (driver) it names otherwise.
func imports(imp, named string) bool {
	if strings.HasPrefix(named, module) {
		return imp == named
	}
	return imp == named || strings.HasPrefix(imp, named+"/")
}

// TestPackageListIsComplete checks that the package list of architecture.md names every
// package of the module, so the list cannot fall behind the tree.
func TestPackageListIsComplete(t *testing.T) {
	listed := architecturePackageList(t)
	if len(listed) < 10 {
		t.Fatalf("read %d names from the package list in docs/architecture.md; its format changed?", len(listed))
	}
	for _, p := range listPackages(t) {
		if p.rel() == "." || p.rel() == "docs" {
			continue // server.go is listed by file; docs/ holds these tests
		}
		if !listed[p.rel()] {
			t.Errorf("%s is missing from the package list (## Packages) in docs/architecture.md: add a line for it", p.rel())
		}
	}
}

var listColumns = regexp.MustCompile(`^( *)(\S.*?)(?:\s{2,}.*)?$`)

// architecturePackageList reads the names of the fenced list under "## Packages": a line
// starting at column 0 names top-level paths ("internal/gateway/", or several separated by
// ", "); one indented by two spaces names a path under the last of them; deeper indented
// lines continue a description.
func architecturePackageList(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	section, inFence, parent := false, false, ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Packages"
			continue
		case !section:
			continue
		case strings.HasPrefix(line, "```"):
			if inFence {
				return listed
			}
			inFence = true
			continue
		case !inFence || strings.TrimSpace(line) == "":
			continue
		}
		m := listColumns.FindStringSubmatch(line)
		indent, names := len(m[1]), m[2]
		if indent > 2 {
			continue
		}
		for _, name := range strings.Split(names, ", ") {
			name = strings.Trim(strings.TrimSpace(name), "/")
			if indent == 2 {
				name = parent + "/" + name
			} else {
				parent = name
			}
			listed[name] = true
		}
	}
	t.Fatal("docs/architecture.md: no fenced package list under ## Packages")
	return nil
}

type goPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
	Error      *struct{ Err string }
}

func (p goPackage) rel() string { return relPath(p.ImportPath) }

func relPath(importPath string) string {
	if importPath == module {
		return "."
	}
	return strings.TrimPrefix(importPath, module+"/")
}

// layerOf returns the index of the layer holding a package (-1 for none), and whether it is
// tooling, by the longest path that names it.
func layerOf(rel string) (layer int, tool bool) {
	best := -1
	layer = -1
	names := func(path string) bool {
		if path == "." {
			return rel == "."
		}
		return rel == path || strings.HasPrefix(rel, path+"/")
	}
	for i, l := range layers {
		for _, p := range l.packages {
			if names(p) && len(p) > best {
				best, layer, tool = len(p), i, false
			}
		}
	}
	for _, p := range tooling {
		if names(p) && len(p) > best {
			best, layer, tool = len(p), -1, true
		}
	}
	return layer, tool
}

var packagesOnce struct {
	pkgs []goPackage
	err  error
	done bool
}

// listPackages runs `go list` over the module once per test binary.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	if !packagesOnce.done {
		packagesOnce.done = true
		packagesOnce.pkgs, packagesOnce.err = goList(repoRoot(t), "./...")
	}
	if packagesOnce.err != nil {
		t.Fatal(packagesOnce.err)
	}
	return packagesOnce.pkgs
}

// standardPackages tells which of the packages the module imports are the standard library's.
func standardPackages(t *testing.T, pkgs []goPackage) map[string]bool {
	t.Helper()
	var imports []string
	for _, p := range pkgs {
		imports = append(imports, p.Imports...)
	}
	slices.Sort(imports)
	list, err := goList(repoRoot(t), slices.Compact(imports)...)
	if err != nil {
		t.Fatal(err)
	}
	standard := map[string]bool{}
	for _, p := range list {
		standard[p.ImportPath] = p.Standard
	}
	return standard
}

func goList(dir string, patterns ...string) ([]goPackage, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Imports,Standard,Error"}, patterns...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list: " + err.Error() + ": " + stderr.String())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		if p.Error != nil { // an import cycle, a missing package: the rules cannot be read
			return nil, errors.New("go list " + p.ImportPath + ": " + p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
}
