// Package model holds the Go types bound to the GraphQL schema: generated ones in
// models_gen.go and the hand-written ones here, whose fields are resolved lazily.
package model

// Conversation is a conversation the viewer may read. Its seq fields are resolved through the
// request's state loader, so a list of conversations costs one batch of state reads.
type Conversation struct {
	ID string
}

// Viewer is the authenticated user; its fields are resolved from their conversation list.
type Viewer struct {
	UserID string
}
