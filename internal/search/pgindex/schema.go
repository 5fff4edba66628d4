package pgindex

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema's versions, applied in order, each once, in one transaction per
// open. {{table}} is the table's name (Options.Table), a plain identifier.
//
// The table holds one row per indexed message. words is the message's words as msggate cuts
// them (docWords), and tsv is generated from it, so the tsvector is always the words of the
// row's text and only one place (Go) decides what a word is, for documents and queries alike;
// the text search parser's rules (e-mail addresses, hyphenated words, URLs as one token)
// would otherwise make a word findable in one engine and not the other. Version 1 also
// created a pg_trgm index of the lower-cased text, for substrings; version 3 drops it. conversation_id sorts as bytes (COLLATE "C"),
// as the cursor's Go comparison does.
var migrations = []string{
	`CREATE EXTENSION IF NOT EXISTS pg_trgm;
	CREATE TABLE IF NOT EXISTS {{table}} (
		conversation_id text COLLATE "C" NOT NULL,
		seq bigint NOT NULL,
		sender_id text NOT NULL,
		content_type integer NOT NULL,
		send_time bigint NOT NULL,
		text text NOT NULL,
		words text NOT NULL,
		hidden_for text[] NOT NULL DEFAULT '{}',
		tsv tsvector GENERATED ALWAYS AS (array_to_tsvector(string_to_array(words, ' '))) STORED,
		PRIMARY KEY (conversation_id, seq)
	);
	CREATE INDEX IF NOT EXISTS {{table}}_tsv ON {{table}} USING gin (tsv);
	CREATE INDEX IF NOT EXISTS {{table}}_trgm ON {{table}} USING gin (lower(text) gin_trgm_ops);`,
	// The planner knows a word's frequency only if ANALYZE kept it among the column's most
	// common elements (ten per unit of the statistics target); any other word is estimated
	// at half the rarest kept one's. At the default target (100: a thousand words) a word in
	// 30 of a million messages looks common enough that the planner also builds a bitmap of
	// every row in the viewer's conversations to AND with it, which costs more than the
	// word's few rows. Ten thousand words make that estimate ten times closer. It applies
	// from the next ANALYZE (autovacuum's, after enough writes).
	`ALTER TABLE {{table}} ALTER COLUMN tsv SET STATISTICS 1000;`,
	// The trigram index served nothing the bigrams in the tsvector do not: every substring a
	// query holds is CJK, found through its bigrams. Worse, the planner took the two indexes'
	// conditions for independent and, thinking the pair rare, scanned every match in the
	// whole table instead of narrowing by the viewer's conversations. It was also the
	// largest index (29% of the total at a million messages) and the costliest to keep.
	`DROP INDEX IF EXISTS {{table}}_trgm;`,
	// The viewer's conversations, narrowed inside the index by what the filters read: a
	// search ANDs this bitmap with its words', so a sender, a time range or a content type
	// leaves fewer rows to visit in the heap (or, for a sender, spares the word's bitmap),
	// where the primary key's bitmap held every row of the conversations. The sender is cut
	// to a prefix (the heap's row decides) so that no sender id, however long, makes an
	// entry too long to index and its batch fail at every retry.
	`CREATE INDEX IF NOT EXISTS {{table}}_scope ON {{table}} (conversation_id, send_time, left(sender_id, 64), content_type);`,
}

// migrate brings the schema to the newest version. Several gateways may open the index at
// once: an advisory lock lets one migrate while the others wait, then
// find nothing left to do.
func (x *Index) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, x.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "msggate search schema"); err != nil {
			return err
		}
		versions := x.table + "_schema"
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+versions+` (version integer NOT NULL)`); err != nil {
			return err
		}
		var version int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+versions).Scan(&version); err != nil {
			return err
		}
		if version > len(migrations) {
			return fmt.Errorf("pgindex: table %s has schema version %d, newer than this msggate knows (%d)", x.table, version, len(migrations))
		}
		for v := version + 1; v <= len(migrations); v++ {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(migrations[v-1], "{{table}}", x.table)); err != nil {
				return fmt.Errorf("pgindex: migrate to schema version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+versions+` (version) VALUES ($1)`, v); err != nil {
				return err
			}
		}
		return nil
	})
}
