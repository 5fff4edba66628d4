package graph

import (
	"math"

	"github.com/msggate/msggate/graph/model"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/search/finder"
)

// DefaultMaxComplexity is the budget the prices below are set against: the server's default
// complexity limit.
const DefaultMaxComplexity = 5000

// Query complexity counts the objects a query can make msggate resolve: every object field
// costs 1 plus the cost of what is selected inside it, scalar fields cost nothing (they are
// read from an object already loaded), and a list costs its length times one item. Lists that
// take their length from an argument are priced here; a list without such an argument
// (History.messages, ConversationConnection.nodes, Message.atUserIDs) is sized by the field
// above it or by the schema, and costs one item. TestListFieldsArePriced fails when a field
// with a size argument is added without a price.
//
// With the default budget of 5000, these fit: messages of 1000 seqs with every field (2001),
// history(limit: 200) with every field (402), a page of 100 conversations with their last
// message and 20 messages of history each (4402). These do not: 100 conversations with 50
// messages of history each (5202), three aliases of messages with 1000 seqs each (6003).
// seqAtTime, a scalar, is priced as the chunk reads of its search (seqAtTimeCost), so a page
// of 100 conversations that each ask it costs at least 2500.
// TestComplexityExamples checks these numbers.
func priceLists(c *ComplexityRoot) {
	c.Query.Messages = func(child int, _ string, seqs []int64) int {
		return itemsCost(len(seqs), child)
	}
	c.Mutation.DeleteMessages = func(child int, _ string, seqs []int64, _ *bool) int {
		return itemsCost(len(seqs), child)
	}
	c.Conversation.History = func(child int, _, _ *int64, limit *int, _ *int64, _ *string) int {
		return pageCost(orDefault(limit, im.DefaultHistoryLimit), child)
	}
	// A scalar, but found by a binary search that reads up to about log2(chunks)+1 chunks:
	// priced as the reads of the deepest search a conversation can need.
	c.Conversation.SeqAtTime = func(int, int64, *model.TimeDirection) int { return seqAtTimeCost }
	// The messages of a node's unread mentions, read as messages by seq are.
	c.Conversation.UnreadMentions = func(child int, limit *int) int {
		return itemsCost(orDefault(limit, im.DefaultUnreadMentions), child)
	}
	c.Viewer.Conversations = func(child int, first *int, _ *string) int {
		return pageCost(orDefault(first, defaultConversationPage), child)
	}
	// A page of hits, each loaded as a message by seq is.
	c.Query.Search = func(child int, _ string, _, _ *string, _ []int, _, _ *int64, first *int, _ *string) int {
		return pageCost(orDefault(first, finder.DefaultFirst), child)
	}
	c.Query.SyncState = func(child int, first *int, _ *string) int {
		return pageCost(orDefault(first, im.MaxSyncConversations), child)
	}
	c.Query.SyncDifference = func(child int, _ string, limit *int) int {
		return pageCost(orDefault(limit, im.DefaultSyncEvents), child)
	}
}

// seqAtTimeCost is what Conversation.seqAtTime costs: the chunk reads of a binary search over
// 2^23 chunks (some 800 million messages), and one more.
const seqAtTimeCost = 24

// itemsCost prices a field that returns a list of n objects directly: each item is an object
// (1) with its selected fields (child).
func itemsCost(n, child int) int {
	return SaturatingAdd(1, saturatingMul(n, SaturatingAdd(1, child)))
}

// pageCost prices a field that returns a page of n items: the page's own list field already
// counts one item's object in child. A page costs at least n, as its items are loaded even
// when none of their fields is selected (history { hasMoreBefore }).
func pageCost(n, child int) int {
	return SaturatingAdd(1, saturatingMul(n, max(child, 1)))
}

func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// SaturatingAdd and saturatingMul keep a cost at math.MaxInt rather than let a client wrap it
// around into a small or negative number with huge list sizes (or, in the server's shape
// limit, aliases spread through fragments).
func SaturatingAdd(a, b int) int {
	if a < 0 || b < 0 {
		return max(a, b, 0)
	}
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

func saturatingMul(a, b int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}
