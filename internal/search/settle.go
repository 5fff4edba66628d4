package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// SettleRounds bounds how many times Settle writes a batch's keys again.
const SettleRounds = 5

// ErrUnsettled is returned (wrapped) by Settle when the store still showed something else
// than the index was given after SettleRounds writes: the caller keeps the keys to index again
// later (or reports the run as failed) rather than leave a wrong index behind silently.
var ErrUnsettled = errors.New("search: the store kept changing while it was indexed")

// Settle applies changes, the changes that make the index show what the store showed of their
// keys when they were read, and then makes sure that is still what the store shows: reread
// reads the keys again (returning, for each key, its change as of now, in the same order), and
// a key whose change differs from what the index was last given is written again and read
// again, until none differs.
//
// Reading a slot and writing it is not one step: a revoke that lands between them has its own
// Remove applied before this Put, and the Put would put the revoked message back for good. Once
// a re-read made after our last Apply agrees with it, every store change our write could have
// overtaken is seen; any later store change has its index change applied after its store
// write, after that re-read and so after our Apply, and it lands last.
//
// Only changes whose keys reread can read belong here (Put and Remove as ingest.SlotChange
// makes them, never Hide); a key may appear once per batch.
func Settle(ctx context.Context, engine Engine, changes []Change, reread func(ctx context.Context, keys []Key) ([]Change, error)) error {
	given := changes
	for round := 1; ; round++ {
		if len(given) == 0 {
			return nil
		}
		if err := engine.Apply(ctx, given); err != nil {
			return err
		}
		keys := make([]Key, len(given))
		for i, c := range given {
			keys[i] = c.Key()
		}
		now, err := reread(ctx, keys)
		if err != nil {
			return err
		}
		if len(now) != len(given) {
			return fmt.Errorf("search: re-reading %d keys returned %d changes", len(given), len(now))
		}
		var moved []Change
		for i := range now {
			if !now[i].Equal(given[i]) {
				moved = append(moved, now[i])
			}
		}
		if len(moved) > 0 && round == SettleRounds {
			return fmt.Errorf("%w: %d messages (first %s/%d) still changed after %d writes",
				ErrUnsettled, len(moved), moved[0].Key().ConversationID, moved[0].Key().Seq, round)
		}
		given = moved
	}
}

// Key is the message a change is about.
func (c Change) Key() Key {
	switch {
	case c.Put != nil:
		return c.Put.Key
	case c.Remove != nil:
		return *c.Remove
	case c.Hide != nil:
		return c.Hide.Key
	}
	return Key{}
}

// Equal reports whether c and d change the index alike: the same kind of change to the same
// message, with the same document for a Put (its HiddenFor in the same order, as one slot
// read twice gives it).
func (c Change) Equal(d Change) bool {
	switch {
	case c.Put != nil:
		return d.Put != nil && c.Put.equal(d.Put)
	case c.Remove != nil:
		return d.Remove != nil && *c.Remove == *d.Remove
	case c.Hide != nil:
		return d.Hide != nil && *c.Hide == *d.Hide
	}
	return d.Put == nil && d.Remove == nil && d.Hide == nil
}

func (a *Doc) equal(b *Doc) bool {
	return a.Key == b.Key && a.SenderID == b.SenderID && a.ContentType == b.ContentType &&
		a.SendTime == b.SendTime && a.Text == b.Text && slices.Equal(a.HiddenFor, b.HiddenFor)
}
