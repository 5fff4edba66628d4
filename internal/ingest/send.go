package ingest

import (
	"context"

	"github.com/msggate/msggate/internal/im"
)

// Sender is who sends a message through Send.
type Sender struct {
	UserID string
	// Admin marks an admin token: only an admin may send notifications (see im.CanSend).
	Admin bool
}

// Access returns an error when the sender may not write to a conversation. The GraphQL
// boundary passes its membership check, which reads through the request's loader.
type Access func(ctx context.Context, conversationID string) error

// Send stores one message a user sends, as them, and returns its first placement (its chat
// conversation, or for a notification its notification conversation). Before anything is
// stored it checks the message's sizes, that only an admin sends a notification, and, through
// access, that the sender may write to the chat conversation.
func (in *Ingester) Send(ctx context.Context, sender Sender, m *im.Message, access Access) (Placed, error) {
	msg := *m
	msg.SendID = sender.UserID
	conv, err := checkSend(sender, &msg)
	if err != nil {
		return Placed{}, err
	}
	if err := access(ctx, conv); err != nil {
		return Placed{}, err
	}
	results, err := in.Ingest(ctx, []*im.Message{&msg})
	if err != nil {
		return Placed{}, err
	}
	return results[0].Placements[0], nil
}

// checkSend decides whether sender may send m and returns the chat conversation the sender
// must belong to. Sizes come first, so an oversized input costs no further work.
func checkSend(sender Sender, m *im.Message) (string, error) {
	if err := im.ValidateForSend(m); err != nil {
		return "", err
	}
	if !im.CanSend(m, sender.Admin) {
		return "", im.Errorf(im.EFORBIDDEN, "only an admin may send notifications")
	}
	return im.ChatConversationID(m)
}
