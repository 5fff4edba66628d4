package cache

import (
	"strconv"
	"strings"

	"github.com/msggate/msggate/internal/im"
)

// Every key and channel name the cache uses is spelled here, once (their layout and what each
// holds: doc.go). A key of a conversation, a user, a group's memberships or a client address
// carries that one's Redis Cluster hash tag, so that a script may touch several of them.

// The hash tags' leads and the parts of the names after them.
const (
	userTag    = "{u:"
	groupTag   = "{g:"
	addressTag = "{a:"

	chunkPart      = "chunk:"
	seqStatePart   = "seqstate"
	allocPart      = "alloc"
	allocLockPart  = "alloclock"
	logPart        = "log"
	eventsPart     = "events"
	eventKeysPart  = "evkeys"
	feedPart       = "feed"
	followedPart   = "followed"
	mentionPart    = "mention"
	readStatePart  = "readstate"
	convsPart      = "convs"
	convsVerPart   = "convsv"
	orderPart      = "order"
	membersPart    = "members"
	ratePart       = "rate"
	apqPart        = "apq"
	followedSince  = "followed:since"
	feedSkipped    = "feed:skipped"
	searchBacklog  = "search:backlog"
	storeID        = "storeid"
	instancePrefix = "instance:"
	apqPrefix      = "apq:"
)

// tagged is the key of name under the hash tag lead+id+"}".
func (c *Cache) tagged(lead, id, name string) string {
	return c.opts.Prefix + lead + id + "}:" + name
}

func (c *Cache) convKey(conversationID, name string) string {
	return c.tagged("{", conversationID, name)
}

func (c *Cache) userKey(userID, name string) string { return c.tagged(userTag, userID, name) }

func (c *Cache) chunkKey(docID string) (string, error) {
	conv, idx, err := im.ParseDocID(docID)
	if err != nil {
		return "", err
	}
	return c.chunkKeyOf(conv, idx), nil
}

func (c *Cache) chunkKeyOf(conversationID string, index int64) string {
	return c.convKey(conversationID, chunkPart+strconv.FormatInt(index, 10))
}

// seqStateKey is the key of a conversation's seq state.
func (c *Cache) seqStateKey(conversationID string) string {
	return c.convKey(conversationID, seqStatePart)
}

func (c *Cache) allocKeys(conversationID string) []string {
	return []string{c.convKey(conversationID, allocPart), c.convKey(conversationID, allocLockPart)}
}

func (c *Cache) groupLogKeys(conversationID string) (log, events, keys string) {
	return c.convKey(conversationID, logPart), c.convKey(conversationID, eventsPart), c.convKey(conversationID, eventKeysPart)
}

// GroupChannel is the pub/sub channel on which a group stream's new events are published.
func (c *Cache) GroupChannel(conversationID string) string {
	return c.convKey(conversationID, feedPart)
}

func (c *Cache) followedSeqKey(conversationID string) string {
	return c.convKey(conversationID, followedPart)
}

func (c *Cache) mentionKey(conversationID string) string {
	return c.convKey(conversationID, mentionPart)
}

func (c *Cache) readStateKey(userID string) string { return c.userKey(userID, readStatePart) }

func (c *Cache) listKeys(userID string) []string {
	return []string{c.userKey(userID, convsPart), c.userKey(userID, convsVerPart)}
}

func (c *Cache) orderKey(userID string) string { return c.userKey(userID, orderPart) }

// eventLogKeys are a user's event log, its events and the read state its scripts raise.
func (c *Cache) eventLogKeys(userID string) (log, events, read string) {
	return c.userKey(userID, logPart), c.userKey(userID, eventsPart), c.readStateKey(userID)
}

// eventKeysKey names the sorted set of the keys of a user's logged events (EventAppend.Key),
// scored by the time of their append.
func (c *Cache) eventKeysKey(userID string) string { return c.userKey(userID, eventKeysPart) }

// EventChannel is the pub/sub channel on which a user's new events are published.
func (c *Cache) EventChannel(userID string) string { return c.userKey(userID, eventsPart) }

// channelOf names what a channel carries: a user's events or a group stream's.
func (c *Cache) channelOf(ch string) (userID, group string, ok bool) {
	userLead, groupLead := c.opts.Prefix+userTag, c.opts.Prefix+"{"
	userTail, groupTail := "}:"+eventsPart, "}:"+feedPart
	switch {
	case strings.HasPrefix(ch, userLead) && strings.HasSuffix(ch, userTail):
		return ch[len(userLead) : len(ch)-len(userTail)], "", true
	case strings.HasPrefix(ch, groupLead) && strings.HasSuffix(ch, groupTail):
		return "", ch[len(groupLead) : len(ch)-len(groupTail)], true
	}
	return "", "", false
}

func (c *Cache) rateKey(userID string) string { return c.userKey(userID, ratePart) }

func (c *Cache) addressRateKey(address string) string {
	return c.tagged(addressTag, address, ratePart)
}

func (c *Cache) membershipKey(groupID string) string {
	return c.tagged(groupTag, groupID, membersPart)
}

func (p *PersistedQueries) key(hash string) string { return p.c.opts.Prefix + apqPrefix + hash }

func (p *PersistedQueries) registrationsKey(userID string) string {
	return p.c.userKey(userID, apqPart)
}

// instanceKey names the key that says a gateway instance is alive.
func (c *Cache) instanceKey(id string) string { return c.opts.Prefix + instancePrefix + id }

func (c *Cache) followedSetKey() string { return c.opts.Prefix + followedPart }

func (c *Cache) followedSinceKey() string { return c.opts.Prefix + followedSince }

func (c *Cache) skippedRecordsKey() string { return c.opts.Prefix + feedSkipped }

func (c *Cache) searchBacklogKey() string { return c.opts.Prefix + searchBacklog }

func (c *Cache) storeIDKey() string     { return c.opts.Prefix + storeID }
func (c *Cache) discardLockKey() string { return c.opts.Prefix + storeID + ":discard" }

// StoreState reports whether key is one of this Cache's keys that describe the store: every
// key of the prefix but those that describe none (the identity record and its lock, live
// instances, persisted queries and their counts, rate buckets, OpenIM mode's follower state
// and search backlog, which describe OpenIM's store). A kind of key added later describes the store unless it
// is named here, so a discard never leaves it behind.
func (c *Cache) StoreState(key string) bool {
	rest, ok := strings.CutPrefix(key, c.opts.Prefix)
	if !ok {
		return false
	}
	switch {
	case rest == storeID, strings.HasPrefix(rest, storeID+":"),
		strings.HasPrefix(rest, instancePrefix), strings.HasPrefix(rest, apqPrefix),
		strings.HasSuffix(rest, "}:"+ratePart), strings.HasPrefix(rest, userTag) && strings.HasSuffix(rest, "}:"+apqPart),
		rest == followedPart, rest == followedSince, rest == feedSkipped, rest == searchBacklog:
		return false
	}
	return true
}
