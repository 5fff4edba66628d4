package pgindex

import (
	"context"
	"strconv"
	"strings"

	"github.com/msggate/msggate/internal/search"
)

// Search answers one request with one statement, so the matches are found once for the
// page and the count: the matching keys (conversation, seq, send time; no text) are
// collected once, counted, and the page (First + 1 of them after the cursor, to know whether
// more follow) is taken from them newest first; only the page's rows are read again for their
// text. The count is then exact however far it goes; Result.Count stops at the limit.
//
// The viewer's scopes are two arrays unnested into a relation joined on the primary key
// (conversation_id, seq >= min_seq): the planner either walks each scope's rows and checks
// the words, or looks the words up in the GIN indexes and keeps the rows in scope, whichever
// its statistics say is cheaper for these words and these conversations.
func (x *Index) Search(ctx context.Context, req search.Request) (search.Result, error) {
	var res search.Result
	scopes := dedupScopes(req.Scopes)
	if len(scopes) == 0 {
		res.CountIsExact = true
		return res, nil
	}
	q := parseQuery(req.Text)
	first := max(req.First, 0)

	var a args
	// matches is materialized so that the count and the page read it once, not plan it twice.
	sql := "WITH matches AS MATERIALIZED (SELECT m.conversation_id, m.seq, m.send_time " +
		x.from(&a, scopes) + " WHERE " + strings.Join(filters(&a, req, scopes, q), " AND ") + ")" +
		" SELECT c.n, p.conversation_id, p.seq, p.send_time, t.text" +
		" FROM (SELECT count(*) AS n FROM matches) AS c" +
		" LEFT JOIN LATERAL (SELECT * FROM matches m" + where(keyset(&a, req.After)) +
		" ORDER BY m.send_time DESC, m.conversation_id, m.seq DESC LIMIT " + strconv.Itoa(first+1) + ") AS p ON true" +
		" LEFT JOIN " + x.table + " t ON t.conversation_id = p.conversation_id AND t.seq = p.seq" +
		" ORDER BY p.send_time DESC, p.conversation_id, p.seq DESC"

	err := x.do(ctx, "search", func(ctx context.Context) error {
		res.Hits = nil
		res.HasMore = false
		rows, err := x.pool.Query(ctx, sql, a...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				conv *string
				seq  *int64
				sent *int64
				text *string
			)
			if err := rows.Scan(&res.Count, &conv, &seq, &sent, &text); err != nil {
				return err
			}
			if conv == nil {
				continue // no page: the count alone
			}
			if len(res.Hits) == first {
				res.HasMore = true
				continue
			}
			h := search.Hit{Key: search.Key{ConversationID: *conv, Seq: *seq}, SendTime: *sent}
			if text != nil {
				h.Highlight = highlight(*text, q)
			}
			res.Hits = append(res.Hits, h)
		}
		return rows.Err()
	})
	if err != nil {
		return search.Result{}, err
	}
	res.CountIsExact = res.Count <= x.countLimit
	res.Count = min(res.Count, x.countLimit)
	return res, nil
}

// where is a WHERE clause of conds, or nothing when there are none.
func where(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// args collects a statement's parameters and names each as it is added.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// from is the FROM clause: the messages in the viewer's scopes, from each scope's min seq.
func (x *Index) from(a *args, scopes []search.Scope) string {
	convs := make([]string, len(scopes))
	mins := make([]int64, len(scopes))
	for i, s := range scopes {
		convs[i], mins[i] = s.ConversationID, s.MinSeq
	}
	return "FROM " + x.table + " m JOIN unnest(" + a.add(convs) + "::text[], " + a.add(mins) + "::bigint[]) AS s(conversation_id, min_seq)" +
		" ON m.conversation_id = s.conversation_id AND m.seq >= s.min_seq"
}

// filters are the conditions every hit meets, counted or not: the query, not hidden for the
// viewer, and the request's filters.
func filters(a *args, req search.Request, scopes []search.Scope, q query) []string {
	convs := make([]string, len(scopes))
	for i, s := range scopes {
		convs[i] = s.ConversationID
	}
	where := []string{
		// Implied by the join, but spelled out it lets the planner AND a bitmap of the
		// scopes' rows (from the primary key) with the words' (from the GIN index), and visit
		// only the rows in both: a common word then costs its matches in the scopes, not
		// every row of the scopes.
		"m.conversation_id = ANY (" + a.add(convs) + "::text[])",
		"NOT (" + a.add(req.Viewer) + " = ANY (m.hidden_for))",
	}
	if ts := q.tsquery(); ts != "" {
		where = append(where, "m.tsv @@ "+a.add(ts)+"::tsquery")
	}
	for _, sub := range q.substrings {
		// What decides a substring; its bigram in the tsquery finds the candidates.
		where = append(where, "lower(m.text) LIKE "+a.add(likePattern(sub)))
	}
	if req.SenderID != "" {
		// The prefix is what the scope index holds; the whole id decides.
		s := a.add(req.SenderID)
		where = append(where, "left(m.sender_id, 64) = left("+s+", 64)", "m.sender_id = "+s)
	}
	if len(req.ContentTypes) > 0 {
		where = append(where, "m.content_type = ANY ("+a.add(req.ContentTypes)+"::integer[])")
	}
	if req.SentAfter != 0 {
		where = append(where, "m.send_time > "+a.add(req.SentAfter))
	}
	if req.SentBefore != 0 {
		where = append(where, "m.send_time < "+a.add(req.SentBefore))
	}
	return where
}

// keyset is the condition for the rows strictly after the cursor in the result order
// (send_time descending, conversation_id ascending, seq descending): a row comparison cannot
// mix directions, so it is spelled out.
func keyset(a *args, after *search.Cursor) []string {
	if after == nil {
		return nil
	}
	t, c, s := a.add(after.SendTime), a.add(after.ConversationID), a.add(after.Seq)
	return []string{"(m.send_time < " + t + " OR (m.send_time = " + t + " AND (m.conversation_id > " + c +
		" OR (m.conversation_id = " + c + " AND m.seq < " + s + "))))"}
}

// dedupScopes keeps one scope per conversation (the stricter min seq, should the caller
// repeat one), since a repeated scope would repeat its hits in the join.
func dedupScopes(scopes []search.Scope) []search.Scope {
	seen := make(map[string]int, len(scopes))
	out := make([]search.Scope, 0, len(scopes))
	for _, s := range scopes {
		if i, ok := seen[s.ConversationID]; ok {
			out[i].MinSeq = max(out[i].MinSeq, s.MinSeq)
			continue
		}
		seen[s.ConversationID] = len(out)
		out = append(out, s)
	}
	return out
}
