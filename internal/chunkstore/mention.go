package chunkstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/im"
)

// CollectionMentions is the mention index: the messages that mention someone, by conversation
// and seq, so that unread mentions are counted without reading the chunks.
const CollectionMentions = "msg_mention"

// MentionBlock is how many seqs one mention document covers. A block is read whole, so it
// stays small (only the messages that mention someone are in it), and a range of unread seqs
// is a few finds by _id: one per MentionBlock seqs.
const MentionBlock = 1000

// mentionDoc is one block of a conversation's mention index: {_id: "<conversationID>:<block>",
// m: {"<seq>": entry}}. An entry is set whole when its message is stored, removed when the
// message is revoked or deleted for everyone, and gains a hidden user when one deletes it for
// themselves. An entry without a sender is none (a hide that raced a removal).
type mentionDoc struct {
	M map[string]mentionEntry `bson:"m"`
}

type mentionEntry struct {
	Users  []string `bson:"u,omitempty"`
	All    bool     `bson:"a,omitempty"`
	SendID string   `bson:"s,omitempty"`
	Hidden []string `bson:"h,omitempty"`
}

func mentionDocID(conversationID string, seq int64) string {
	return conversationID + ":" + strconv.FormatInt((seq-1)/MentionBlock, 10)
}

func mentionPath(seq int64) string { return "m." + strconv.FormatInt(seq, 10) }

// byMentionDoc groups seqs by the mention document that holds them, in seq order.
func byMentionDoc[T any](conversationID string, items []T, seqOf func(T) int64) ([]string, map[string][]T) {
	groups := map[string][]T{}
	var ids []string
	for _, it := range items {
		id := mentionDocID(conversationID, seqOf(it))
		if _, ok := groups[id]; !ok {
			ids = append(ids, id)
		}
		groups[id] = append(groups[id], it)
	}
	return ids, groups
}

// updateMentions applies one update to each mention document of the conversation the items
// fall in, under the document's lock (an update is a read-modify-write on FerretDB).
func updateMentions[T any](ctx context.Context, s *Store, op, conversationID string, items []T, seqOf func(T) int64, upsert bool, update func([]T) bson.D) error {
	if len(items) == 0 {
		return nil
	}
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	ids, groups := byMentionDoc(conversationID, items, seqOf)
	for _, id := range ids {
		lctx, unlock, err := s.lockDocs(ctx, CollectionMentions, id)
		if err != nil {
			return err
		}
		_, err = s.db.Collection(CollectionMentions).UpdateOne(lctx, bson.D{{Key: "_id", Value: id}}, update(groups[id]),
			options.UpdateOne().SetUpsert(upsert))
		unlock()
		if err != nil {
			return storeError(op, err)
		}
	}
	return nil
}

// RecordMentions writes the mentions of stored messages into the index. Writing one again
// writes the same entry: the relay may finish a send twice.
func (s *Store) RecordMentions(ctx context.Context, conversationID string, ms []im.Mention) error {
	return updateMentions(ctx, s, "record mentions", conversationID, ms, func(m im.Mention) int64 { return m.Seq }, true,
		func(ms []im.Mention) bson.D {
			set := bson.D{}
			for _, m := range ms {
				set = append(set, bson.E{Key: mentionPath(m.Seq), Value: mentionEntry{Users: m.Users, All: m.All, SendID: m.SendID, Hidden: m.Hidden}})
			}
			return bson.D{{Key: "$set", Value: set}}
		})
}

// DropMentions removes the messages at seqs from the index (revoked, deleted for everyone).
func (s *Store) DropMentions(ctx context.Context, conversationID string, seqs []int64) error {
	return updateMentions(ctx, s, "drop mentions", conversationID, seqs, func(q int64) int64 { return q }, false,
		func(seqs []int64) bson.D {
			unset := bson.D{}
			for _, q := range seqs {
				unset = append(unset, bson.E{Key: mentionPath(q), Value: ""})
			}
			return bson.D{{Key: "$unset", Value: unset}}
		})
}

// HideMentions records that userID deleted the messages at seqs for themselves: they no
// longer mention userID.
func (s *Store) HideMentions(ctx context.Context, conversationID, userID string, seqs []int64) error {
	return updateMentions(ctx, s, "hide mentions", conversationID, seqs, func(q int64) int64 { return q }, false,
		func(seqs []int64) bson.D {
			add := bson.D{}
			for _, q := range seqs {
				add = append(add, bson.E{Key: mentionPath(q) + ".h", Value: userID})
			}
			return bson.D{{Key: "$addToSet", Value: add}}
		})
}

// FindMentions returns the conversation's indexed mentions with seqs in (after, upTo], in seq
// order: one find by _id per MentionBlock seqs of the range.
func (s *Store) FindMentions(ctx context.Context, conversationID string, after, upTo int64) ([]im.Mention, error) {
	if upTo <= after {
		return nil, nil
	}
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	var ids []string
	for b := after / MentionBlock; b <= (upTo-1)/MentionBlock; b++ {
		ids = append(ids, mentionDocID(conversationID, b*MentionBlock+1))
	}
	docs, err := findByIDs[mentionDoc](ctx, s, s.db.Collection(CollectionMentions), "find mentions", ids)
	if err != nil {
		return nil, err
	}
	var out []im.Mention
	for _, d := range docs {
		for k, e := range d.M {
			seq, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				return nil, storeError("find mentions", fmt.Errorf("mention key %q is not a seq", k))
			}
			if seq <= after || seq > upTo || e.SendID == "" {
				continue
			}
			out = append(out, im.Mention{Seq: seq, Users: e.Users, All: e.All, SendID: e.SendID, Hidden: e.Hidden})
		}
	}
	slices.SortFunc(out, func(a, b im.Mention) int { return int(a.Seq - b.Seq) })
	return out, nil
}
