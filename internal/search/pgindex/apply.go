package pgindex

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/msggate/msggate/internal/search"
)

// Apply applies changes in order, in one round trip and one transaction: the statements go
// as one pgx batch, which PostgreSQL runs as one implicit transaction, so a batch is applied
// whole or not at all. Consecutive puts are one upsert and consecutive removes one delete.
// Every statement is idempotent: a put replaces the row (hidden_for included), a remove of a
// missing row deletes nothing, a hide adds the user once, and a hide of a missing row
// changes nothing.
func (x *Index) Apply(ctx context.Context, changes []search.Change) error {
	if len(changes) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for i := 0; i < len(changes); {
		j := i + 1
		switch c := changes[i]; {
		case c.Put != nil:
			for j < len(changes) && changes[j].Put != nil {
				j++
			}
			x.queuePuts(b, changes[i:j])
		case c.Remove != nil:
			for j < len(changes) && changes[j].Remove != nil {
				j++
			}
			x.queueRemoves(b, changes[i:j])
		case c.Hide != nil:
			b.Queue(`UPDATE `+x.table+` SET hidden_for = array_append(hidden_for, $3)
				WHERE conversation_id = $1 AND seq = $2 AND NOT ($3 = ANY (hidden_for))`,
				c.Hide.ConversationID, c.Hide.Seq, c.Hide.UserID)
		default:
			return fmt.Errorf("pgindex: change %d sets none of Put, Remove, Hide", i)
		}
		i = j
	}
	return x.do(ctx, "apply", func(ctx context.Context) error {
		return x.pool.SendBatch(ctx, b).Close()
	})
}

// queuePuts queues one upsert of the puts, as arrays unnested into rows. Only the last put of
// a message counts, as it would applied one by one (an upsert may not touch a row twice).
func (x *Index) queuePuts(b *pgx.Batch, puts []search.Change) {
	last := make(map[search.Key]int, len(puts))
	for i, c := range puts {
		last[c.Put.Key] = i
	}
	n := len(last)
	var (
		convs   = make([]string, 0, n)
		seqs    = make([]int64, 0, n)
		senders = make([]string, 0, n)
		types   = make([]int32, 0, n)
		times   = make([]int64, 0, n)
		texts   = make([]string, 0, n)
		words   = make([]string, 0, n)
		hidden  = make([]string, 0, n)
	)
	for i, c := range puts {
		d := c.Put
		if last[d.Key] != i {
			continue
		}
		text := clean(d.Text)
		convs = append(convs, d.ConversationID)
		seqs = append(seqs, d.Seq)
		senders = append(senders, d.SenderID)
		types = append(types, d.ContentType)
		times = append(times, d.SendTime)
		texts = append(texts, text)
		words = append(words, docWords(text))
		hidden = append(hidden, hiddenLiteral(d.HiddenFor))
	}
	// hidden_for travels as array literals: unnest cannot take a ragged two-dimensional array.
	b.Queue(`INSERT INTO `+x.table+` AS m (conversation_id, seq, sender_id, content_type, send_time, text, words, hidden_for)
		SELECT c, s, sender, ct, t, txt, w, h::text[]
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::integer[], $5::bigint[], $6::text[], $7::text[], $8::text[])
			AS u(c, s, sender, ct, t, txt, w, h)
		ON CONFLICT (conversation_id, seq) DO UPDATE SET
			sender_id = excluded.sender_id, content_type = excluded.content_type,
			send_time = excluded.send_time, text = excluded.text, words = excluded.words,
			hidden_for = excluded.hidden_for`,
		convs, seqs, senders, types, times, texts, words, hidden)
}

// queueRemoves queues one delete of the removed messages.
func (x *Index) queueRemoves(b *pgx.Batch, removes []search.Change) {
	convs := make([]string, len(removes))
	seqs := make([]int64, len(removes))
	for i, c := range removes {
		convs[i], seqs[i] = c.Remove.ConversationID, c.Remove.Seq
	}
	b.Queue(`DELETE FROM `+x.table+` m USING unnest($1::text[], $2::bigint[]) AS u(c, s)
		WHERE m.conversation_id = u.c AND m.seq = u.s`, convs, seqs)
}

// clean makes text storable: PostgreSQL's text holds neither NUL nor invalid UTF-8, and one
// message it refuses would fail its whole batch again at every retry.
func clean(text string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(text, "\uFFFD"), "\x00", "")
}

// hiddenLiteral writes users as a PostgreSQL array literal, every element quoted.
func hiddenLiteral(users []string) string {
	b := []byte{'{'}
	for i, u := range users {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for _, c := range []byte(u) {
			if c == '"' || c == '\\' {
				b = append(b, '\\')
			}
			b = append(b, c)
		}
		b = append(b, '"')
	}
	return string(append(b, '}'))
}
