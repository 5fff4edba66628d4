// Command gqlgen generates graph's GraphQL code: first what the schema's fields decide in
// msggate's own code (schemaFields: the types that write their own JSON, and the fields a
// remembered conversation node may select), then gqlgen's own generation (gqlgen.yml), with
// one plugin of msggate's, wholeLists. Run it through go generate ./graph.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen/config"
	"github.com/vektah/gqlparser/v2"
)

func main() {
	cfg, err := config.LoadConfigFromDefaultLocations()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen: loading gqlgen.yml:", err)
		os.Exit(2)
	}
	schema, err := gqlparser.LoadSchema(cfg.Sources...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen: loading the schema:", err)
		os.Exit(2)
	}
	files, err := schemaFields(schema)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(3)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.FromSlash(name), src, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gqlgen:", err)
			os.Exit(3)
		}
	}
	if err := api.Generate(cfg, api.PrependPlugin(wholeLists{})); err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(3)
	}
}
