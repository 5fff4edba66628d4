package main

import (
	"fmt"

	"github.com/99designs/gqlgen/codegen"
)

// wholeLists binds the root fields that answer a bare list of messages ([Message!]!) to
// model.Messages, which writes the list in one piece. gqlgen marshals a list of objects with a
// goroutine and a field context per element: a hundred messages by seq cost a hundred
// goroutines, which under load wait to be scheduled one after another. A root field has no Go
// model for gqlgen to bind through, so the binding is made here, before the resolvers and the
// executor are written (main puts this plugin first); what gqlgen writes for a type that
// marshals itself is then used as it is.
type wholeLists struct{}

// wholeListType is the Go type of such a list, and the schema's element it is a list of.
const (
	wholeListType    = "github.com/msggate/msggate/graph/model.Messages"
	wholeListElement = "Message"
)

func (wholeLists) Name() string { return "msggate-whole-lists" }

// GenerateCode rebinds the fields; gqlgen's own generation then writes them.
func (wholeLists) GenerateCode(data *codegen.Data) error {
	b := data.Config.NewBinder()
	typ, err := b.FindTypeFromName(wholeListType)
	if err != nil {
		return fmt.Errorf("finding %s: %w", wholeListType, err)
	}
	for _, root := range []*codegen.Object{data.QueryRoot, data.MutationRoot} {
		if root == nil {
			continue
		}
		for _, f := range root.Fields {
			t := f.Type
			if !t.NonNull || t.Elem == nil || !t.Elem.NonNull || t.Elem.NamedType != wholeListElement {
				continue
			}
			ref, err := b.TypeReference(t, typ)
			if err != nil {
				return fmt.Errorf("binding %s.%s to %s: %w", root.Name, f.Name, wholeListType, err)
			}
			if !ref.IsMarshaler || !ref.IsContext {
				return fmt.Errorf("%s does not marshal itself (MarshalGQLContext)", wholeListType)
			}
			f.TypeReference = ref
			data.ReferencedTypes[ref.UniquenessKey()] = ref
		}
	}
	return nil
}
