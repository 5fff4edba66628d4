// Command gqlgen generates graph's GraphQL code: gqlgen's own generation (gqlgen.yml), with
// one plugin of msggate's, wholeLists. Run it through go generate ./graph.
package main

import (
	"fmt"
	"os"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen/config"
)

func main() {
	cfg, err := config.LoadConfigFromDefaultLocations()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen: loading gqlgen.yml:", err)
		os.Exit(2)
	}
	if err := api.Generate(cfg, api.PrependPlugin(wholeLists{})); err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(3)
	}
}
