package model

import (
	"github.com/99designs/gqlgen/graphql"

	"github.com/msggate/msggate/internal/im"
)

// The Int and Int64 scalars use gqlgen's encoding, but a value that does not fit is the
// client's mistake: it must answer BAD_USER_INPUT, not an internal error.

// MarshalInt64 writes an Int64 as a JSON number.
func MarshalInt64(i int64) graphql.Marshaler { return graphql.MarshalInt64(i) }

// UnmarshalInt64 reads an Int64 from a JSON number or a numeric string.
func UnmarshalInt64(v any) (int64, error) {
	i, err := graphql.UnmarshalInt64(v)
	if err != nil {
		return 0, im.Errorf(im.EINVALID, "not a 64-bit integer: %v", v)
	}
	return i, nil
}

// MarshalInt writes an Int as a JSON number.
func MarshalInt(i int) graphql.Marshaler { return graphql.MarshalInt(i) }

// UnmarshalInt reads an Int (32-bit, as GraphQL defines it).
func UnmarshalInt(v any) (int, error) {
	i, err := graphql.UnmarshalInt32(v)
	if err != nil {
		return 0, im.Errorf(im.EINVALID, "not a 32-bit integer: %v", v)
	}
	return int(i), nil
}
