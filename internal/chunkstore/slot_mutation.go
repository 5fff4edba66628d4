package chunkstore

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/im"
)

// StatusDeleted marks a slot whose message was deleted for everyone. The slot keeps a tombstone
// (sender, IDs, seq, time) so the seq is never handed a new message and reads can say DELETED
// rather than MISSING; content and everything else the sender wrote is gone.
const StatusDeleted = im.DeletedMessageStatus

func slotPath(seq int64) string { return "msgs." + strconv.Itoa(im.SlotIndex(seq)) }

// updateSlots runs one update per chunk touched by seqs; build returns the condition (zero for
// none) and the update document for the seqs of one chunk. It reports how many chunks changed.
func (s *Store) updateSlots(ctx context.Context, op, conversationID string, seqs []int64,
	build func(seqs []int64) (cond chunkCond, update bson.D)) (int64, error) {
	var modified int64
	for _, g := range im.GroupSeqsByDocID(conversationID, seqs) {
		cond, update := build(g.Seqs)
		res, err := s.updateChunk(ctx, op, g.DocID, cond, update)
		if err != nil {
			return modified, err
		}
		if res.modified {
			modified++
		}
	}
	return modified, nil
}

// MarkRead sets is_read on the slots of seqs (single chats: the receiver has read them). The
// caller picks the seqs, so that a reader's own messages are left alone.
func (s *Store) MarkRead(ctx context.Context, conversationID string, seqs []int64) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	_, err = s.updateSlots(ctx, "mark read", conversationID, seqs, func(seqs []int64) (chunkCond, bson.D) {
		set := bson.D{}
		for _, seq := range seqs {
			set = append(set, bson.E{Key: slotPath(seq) + ".is_read", Value: true})
		}
		return chunkCond{}, bson.D{{Key: "$set", Value: set}}
	})
	return err
}

// Revoke records r on the slot of seq. Only the revoke field changes; the message stays for the
// record. It reports false when there is no message at seq or it was already revoked, so that
// revoking twice is a no-op.
func (s *Store) Revoke(ctx context.Context, conversationID string, seq int64, r im.Revoke) (bool, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	path := slotPath(seq)
	n, err := s.updateSlots(ctx, "revoke", conversationID, []int64{seq}, func([]int64) (chunkCond, bson.D) {
		return chunkCond{
				filter: bson.D{
					{Key: path + ".msg", Value: bson.D{{Key: "$ne", Value: nil}}},
					{Key: path + ".revoke", Value: nil},
				},
				holds: func(c *im.Chunk) bool {
					slot := c.Slot(seq)
					return slot != nil && slot.Msg != nil && slot.Revoke == nil
				},
			},
			bson.D{{Key: "$set", Value: bson.D{{Key: path + ".revoke", Value: r}}}}
	})
	return n > 0, err
}

// DeleteForUser hides the messages at seqs from userID only ($addToSet on the slot's del_list).
func (s *Store) DeleteForUser(ctx context.Context, conversationID string, seqs []int64, userID string) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	_, err = s.updateSlots(ctx, "delete for user", conversationID, seqs, func(seqs []int64) (chunkCond, bson.D) {
		add := bson.D{}
		for _, seq := range seqs {
			add = append(add, bson.E{Key: slotPath(seq) + ".del_list", Value: userID})
		}
		return chunkCond{}, bson.D{{Key: "$addToSet", Value: add}}
	})
	return err
}

// DeleteForEveryone wipes the messages at seqs, leaving a tombstone per slot (see
// StatusDeleted). deleted holds the messages as they were, so the tombstones keep their
// identity; seqs without a message are skipped by the caller.
func (s *Store) DeleteForEveryone(ctx context.Context, conversationID string, deleted []*im.Message) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	seqs := make([]int64, len(deleted))
	bySeq := make(map[int64]*im.Message, len(deleted))
	for i, m := range deleted {
		seqs[i] = m.Seq
		bySeq[m.Seq] = m
	}
	_, err = s.updateSlots(ctx, "delete for everyone", conversationID, seqs, func(seqs []int64) (chunkCond, bson.D) {
		set := bson.D{}
		for _, seq := range seqs {
			set = append(set, bson.E{Key: slotPath(seq), Value: im.Slot{Msg: Tombstone(bySeq[seq]), DelList: []string{}}})
		}
		return chunkCond{}, bson.D{{Key: "$set", Value: set}}
	})
	return err
}

// Tombstone returns what remains of a message deleted for everyone.
func Tombstone(m *im.Message) *im.Message {
	return &im.Message{
		SendID: m.SendID, RecvID: m.RecvID, GroupID: m.GroupID,
		ClientMsgID: m.ClientMsgID, ServerMsgID: m.ServerMsgID,
		SessionType: m.SessionType, Seq: m.Seq, SendTime: m.SendTime, CreateTime: m.CreateTime,
		Status: StatusDeleted,
	}
}
