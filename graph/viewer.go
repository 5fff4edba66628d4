package graph

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	gosync "sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/history"
	"github.com/msggate/msggate/internal/im"
)

// Page sizes of the conversation list.
const (
	defaultConversationPage = 20
	maxConversationPage     = 100
)

// viewerOf answers Query.viewer.
func viewerOf(ctx context.Context) (*model.Viewer, error) {
	v, err := auth.ViewerFrom(ctx)
	if err != nil {
		return nil, err
	}
	return &model.Viewer{UserID: v.UserID}, nil
}

// totalUnread answers Viewer.totalUnread: the sum over the viewer's conversations.
func totalUnread(ctx context.Context) (int64, error) {
	list, err := loadersFrom(ctx).viewerConversations(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, st := range list {
		n += st.Unread()
	}
	return n, nil
}

// conversationPage answers Viewer.conversations: newest activity first, cursor-paged. The page
// writes its own JSON (model.ConversationConnection), so every field its nodes select is
// resolved here, for all nodes at once: the states come with the page (a ConversationPager
// reads only the page's, whatever the list's length), the last messages in one read, each
// history field's pages side by side so that their chunk reads share a batch. A node the
// instance rendered before from the same state is written from memory (RenderedNodes) and
// needs none of that.
func (r *Resolver) conversationPage(ctx context.Context, first *int, after *string) (*model.ConversationConnection, error) {
	n, err := im.PageSize("first", first, defaultConversationPage, maxConversationPage)
	if err != nil {
		return nil, err
	}
	cursor, err := parseAfter(after)
	if err != nil {
		return nil, err
	}
	l := loadersFrom(ctx)
	var page im.ConversationPage
	if pager, ok := l.convs.(ConversationPager); ok && !totalUnreadSelected(ctx) {
		if page, err = pager.ConversationPage(ctx, l.viewer, cursor, n); err != nil {
			return nil, err
		}
	} else {
		list, err := l.viewerConversations(ctx)
		if err != nil {
			return nil, err
		}
		page = im.PageAfter(list, cursor, n)
	}
	p := pageOf(page)
	out := &model.ConversationConnection{Nodes: p.nodes, Resolved: make([]model.ConversationNode, len(p.states)),
		PageInfo: &model.PageInfo{EndCursor: p.endCursor, HasNextPage: p.hasMore}}
	sel := nodeFieldsSelected(ctx, r.RenderedNodes != nil)
	if sel.shape != nil {
		out.RenderedFor = sel.shape
		viewer, states := l.viewer, p.states
		out.Remember = func(i int, json []byte) { r.RenderedNodes.Put(viewer, sel.shape, states[i], json) }
	}
	// The nodes to resolve: those not written from memory.
	missed := 0
	for i, st := range p.states {
		if json := r.RenderedNodes.Get(l.viewer, out.RenderedFor, st); json != nil {
			out.Resolved[i].Rendered = json
			continue
		}
		missed++
		conv, err := l.convs.ParseConversationID(st.ConversationID)
		if err != nil {
			return nil, err
		}
		out.Resolved[i] = model.ConversationNode{ID: st.ConversationID, Kind: kindOf(conv.Kind), MaxSeq: st.MaxSeq,
			MinSeq: st.VisibleMin(), ReadSeq: st.ReadSeq, UnreadCount: st.Unread()}
	}
	toResolve := p.states
	var at []int // toResolve[k] is node at[k]; nil: node k
	if missed < len(p.states) {
		at, toResolve = make([]int, 0, missed), make([]im.SeqState, 0, missed)
		for i, st := range p.states {
			if out.Resolved[i].Rendered == nil {
				at, toResolve = append(at, i), append(toResolve, st)
			}
		}
	}
	if len(toResolve) == 0 || !sel.lastMessage && !sel.mentionCount && len(sel.histories) == 0 && len(sel.mentionLists) == 0 && len(sel.timeSearches) == 0 {
		return out, nil
	}
	nodeOf := func(k int) *model.ConversationNode {
		if at != nil {
			return &out.Resolved[at[k]]
		}
		return &out.Resolved[k]
	}
	if sel.mentionCount {
		if r.Mentions == nil {
			return nil, errNoMentions
		}
		counts, err := r.Mentions.UnreadMentionCounts(ctx, l.viewer, toResolve)
		if err != nil {
			return nil, err
		}
		for k := range toResolve {
			nodeOf(k).UnreadMentionCount = counts[k]
		}
	}
	h, err := r.historyOf(ctx)
	if err != nil {
		return nil, err
	}
	if sel.lastMessage {
		views, err := h.LastMessages(ctx, toResolve)
		msgs, vals := make([]model.Message, len(views)), make([]messageValues, len(views))
		for k := range toResolve {
			switch {
			case err != nil:
				nodeOf(k).LastMessageErr = err
			case views[k] != nil:
				fillMessage(&msgs[k], &vals[k], *views[k])
				nodeOf(k).LastMessage = &msgs[k]
			}
		}
	}
	if len(sel.histories) > 0 || len(sel.mentionLists) > 0 {
		// A node's history reads its state through the loaders: the page has it.
		states := l.stateLoader()
		for _, st := range p.states {
			states.Prime(ctx, st.ConversationID, st)
		}
	}
	for _, f := range sel.histories {
		// History is never remembered (rememberedFields): every node was resolved.
		if err := historiesOf(ctx, h, f, out.Resolved); err != nil {
			return nil, err
		}
	}
	for _, f := range sel.mentionLists {
		if err := r.mentionListsOf(ctx, f, out.Resolved); err != nil {
			return nil, err
		}
	}
	for _, f := range sel.timeSearches {
		if err := seqsAtTimeOf(ctx, h, f, out.Resolved); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// totalUnreadSelected reports whether the viewer the page is under asks for totalUnread too,
// which reads the whole list: the page is then cut from it rather than read apart.
func totalUnreadSelected(ctx context.Context) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Parent == nil || fc.Parent.Field.Field == nil {
		return false
	}
	for _, f := range graphql.CollectFields(graphql.GetOperationContext(ctx), fc.Parent.Field.Selections, []string{"Viewer"}) {
		if f.Name == "totalUnread" {
			return true
		}
	}
	return false
}

// nodeSelection is what a conversation page's query selects of its nodes.
type nodeSelection struct {
	lastMessage bool
	// mentionCount: the nodes' unreadMentionCount, counted for all of them at once.
	mentionCount bool
	// mentionLists are the unreadMentions fields (mentions.go), never remembered.
	mentionLists []graphql.CollectedField
	histories    []graphql.CollectedField
	// timeSearches are the seqAtTime fields (seq_at_time.go).
	timeSearches []graphql.CollectedField
	// shape keys the nodes' rendering in RenderedNodes (shapeOf); nil when the page asks for
	// nodes more than once (under aliases) or in a way that cannot be remembered.
	shape *ast.Field
}

// nodeFieldsSelected tells which of the page's node fields need reads (lastMessage, each
// history field) and, with remember, whether the nodes' rendering can be remembered.
func nodeFieldsSelected(ctx context.Context, remember bool) nodeSelection {
	fc := graphql.GetFieldContext(ctx)
	oc := graphql.GetOperationContext(ctx)
	var sel nodeSelection
	asked := 0
	for _, f := range graphql.CollectFields(oc, fc.Field.Selections, []string{"ConversationConnection"}) {
		if f.Name != "nodes" {
			continue
		}
		if asked++; asked == 1 && remember {
			sel.shape = shapeOf(f)
		} else {
			sel.shape = nil
		}
		for _, nf := range graphql.CollectFields(oc, f.Selections, []string{"Conversation"}) {
			switch nf.Name {
			case "lastMessage":
				sel.lastMessage = true
			case "unreadMentionCount":
				sel.mentionCount = true
			case "unreadMentions":
				sel.mentionLists = append(sel.mentionLists, nf)
			case "history":
				sel.histories = append(sel.histories, nf)
			case "seqAtTime":
				sel.timeSearches = append(sel.timeSearches, nf)
			}
		}
	}
	return sel
}

// historiesOf reads the history field f of every node. The nodes' pages are read side by side
// (as gqlgen would resolve them), so that their chunk reads share the loaders' batches. A
// failure fails the page at the field that failed: history is not nullable, and neither is
// anything above it up to the data.
func historiesOf(ctx context.Context, h history.Reader, f graphql.CollectedField, nodes []model.ConversationNode) error {
	args := f.ArgumentMap(graphql.GetOperationContext(ctx).Variables)
	var q history.PageQuery
	for name, dst := range map[string]**int64{"beforeSeq": &q.BeforeSeq, "afterSeq": &q.AfterSeq, "aroundSeq": &q.AroundSeq} {
		if v, ok := args[name]; ok && v != nil {
			n, err := model.UnmarshalInt64(v)
			if err != nil {
				return err
			}
			*dst = &n
		}
	}
	if v, ok := args["limit"]; ok && v != nil {
		n, err := model.UnmarshalInt(v)
		if err != nil {
			return err
		}
		q.Limit = &n
	}
	if v, ok := args["aroundClientMsgID"]; ok && v != nil {
		id, err := graphql.UnmarshalString(v)
		if err != nil {
			return err
		}
		q.AroundClientMsgID = &id
	}
	pages := make([]*model.History, len(nodes))
	siblings := withSiblings(ctx)
	if err := eachNode(ctx, f, len(nodes), func(i int) error {
		p, err := h.Page(siblings, nodes[i].ID, q)
		if err != nil {
			return err
		}
		pages[i] = &model.History{Messages: messagesOf(p.Messages), HasMoreBefore: p.HasMoreBefore, HasMoreAfter: p.HasMoreAfter}
		return nil
	}); err != nil {
		return err
	}
	for i := range nodes {
		if nodes[i].Histories == nil {
			nodes[i].Histories = map[*ast.Field]*model.History{}
		}
		nodes[i].Histories[f.Field] = pages[i]
	}
	return nil
}

// eachNode runs read for each of n nodes of a conversation page side by side, for the field f
// of every node, and returns the first failure as that node's field's error (the writer writes
// the nodes, so no null can stand in for one).
func eachNode(ctx context.Context, f graphql.CollectedField, n int, read func(i int) error) error {
	errs := make([]error, n)
	var wg gosync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// gqlgen recovers a resolver's panics on the resolver's goroutine only: one here
			// would end the process. It fails this node's field as a resolver's would.
			defer func() {
				if p := recover(); p != nil {
					errs[i] = graphql.GetOperationContext(ctx).RecoverFunc(ctx, p)
				}
			}()
			errs[i] = read(i)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			path := append(graphql.GetFieldContext(ctx).Path(), ast.PathName("nodes"), ast.PathIndex(i), ast.PathName(f.Alias))
			return &gqlerror.Error{Err: err, Message: err.Error(), Path: path}
		}
	}
	return nil
}

// conversationListPage is one page of a conversation list in activity order.
type conversationListPage struct {
	states    []im.SeqState
	nodes     []*model.Conversation
	endCursor *string
	hasMore   bool
}

// parseAfter parses an after argument (nil: the first page): the place of the previous page's
// last conversation in the order (activity time, ID), so a page stays correct when
// conversations before it move.
func parseAfter(after *string) (*im.ListPosition, error) {
	if after == nil {
		return nil, nil
	}
	t, id, err := decodeCursor(*after)
	if err != nil {
		return nil, err
	}
	return &im.ListPosition{Time: t, ConversationID: id}, nil
}

// pageOf makes the GraphQL page of a page of the list.
func pageOf(page im.ConversationPage) conversationListPage {
	p := conversationListPage{states: page.States, nodes: make([]*model.Conversation, len(page.States)), hasMore: page.HasMore}
	convs := make([]model.Conversation, len(page.States)) // one allocation for the page's nodes
	for i, st := range page.States {
		convs[i].ID = st.ConversationID
		p.nodes[i] = &convs[i]
	}
	if len(page.States) > 0 {
		c := encodeCursor(page.End)
		p.endCursor = &c
	}
	return p
}

func encodeCursor(p im.ListPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.Time, 10) + "|" + p.ConversationID))
}

func decodeCursor(c string) (int64, string, error) {
	bad := im.Errorf(im.EINVALID, "after is not a cursor this server gave out")
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", bad
	}
	t, id, ok := strings.Cut(string(raw), "|")
	if !ok {
		return 0, "", bad
	}
	ts, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, "", bad
	}
	return ts, id, nil
}
