package sync

import (
	"context"
	gosync "sync"
	"time"
)

// listVersioner is a state whose users' conversation lists carry a version that every change
// moves (the Ledger's, kept in Redis beside the cached lists): many users' versions are read in
// one round trip, so a hub can tell cheaply whose groups may have changed.
type listVersioner interface {
	listVersions(ctx context.Context, userIDs []string) ([]string, error)
}

func (l *Ledger) listVersions(ctx context.Context, userIDs []string) ([]string, error) {
	return l.cache.ConversationListVersions(ctx, userIDs)
}

// checkListReads bounds the conversation lists one membership check reads at once: as many as
// one store batch takes, so that lists Redis missed are read from MongoDB many users a query.
const checkListReads = storeBatch

// checkMemberships runs the membership check every HubOptions.MembershipCheck until ctx ends.
func (h *Hub) checkMemberships(ctx context.Context, v listVersioner) {
	defer close(h.checkDone)
	tick := time.NewTicker(h.opts.MembershipCheck)
	defer tick.Stop()
	// checked holds, per user, the version of their list when every subscription of theirs
	// was last found to follow that list's groups.
	checked := map[string]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		checkCtx, cancel := context.WithTimeout(ctx, max(h.opts.MembershipCheck, subscribeTimeout))
		h.checkOnce(checkCtx, v, checked)
		cancel()
	}
}

// checkOnce tells every subscription here whose followed group streams differ from its
// user's groups to re-read what it follows, as the lost hint would have. Only the lists whose
// version moved since checked are read. A failed read is left to the next check.
func (h *Hub) checkOnce(ctx context.Context, v listVersioner, checked map[string]string) {
	// Only users with a subscription that has made what it follows from a read of their
	// groups: the others are still starting, and read their groups themselves. During a
	// reconnect storm the check so reads nothing for the devices still starting.
	h.mu.Lock()
	users := make([]string, 0, len(h.users))
	for u, subs := range h.users {
		for s := range subs {
			if s.synced {
				users = append(users, u)
				break
			}
		}
	}
	h.mu.Unlock()
	subscribed := make(map[string]struct{}, len(users))
	for _, u := range users {
		subscribed[u] = struct{}{}
	}
	for u := range checked {
		if _, ok := subscribed[u]; !ok {
			delete(checked, u)
		}
	}
	versions, err := v.listVersions(ctx, users)
	if err != nil {
		return // Redis is failing; live delivery stands still meanwhile
	}
	var stale []int // indexes in users of the lists to read
	for i, u := range users {
		if seen, ok := checked[u]; ok && seen == versions[i] {
			continue
		}
		if h.startedFrom(u, versions[i]) {
			// Every subscription of the user follows the list of this version, as its
			// start read it: after a reconnect storm, the check reads no list again.
			checked[u] = versions[i]
			continue
		}
		stale = append(stale, i)
	}
	done := make([]bool, len(stale)) // whether each stale user's subscriptions were checked
	var wg gosync.WaitGroup
	reads := make(chan struct{}, checkListReads)
	for j, i := range stale {
		reads <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-reads; wg.Done() }()
			groups, err := h.events.groupStreams(ctx, users[i])
			done[j] = err == nil && h.resyncStrays(users[i], groups)
		}()
	}
	wg.Wait()
	// The versions were read before the lists: a change between the two reads moves the
	// version past the one recorded, and is checked again next time.
	for j, i := range stale {
		if done[j] {
			checked[users[i]] = versions[i]
		}
	}
}

// startedFrom reports whether every subscription of userID here made what it follows from
// the user's list of version, as its start read it.
func (h *Hub) startedFrom(userID, version string) bool {
	if version == "" {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.users[userID]
	for s := range subs {
		if !s.synced || s.listVersion != version {
			return false
		}
	}
	return len(subs) > 0
}

// resyncStrays tells userID's subscriptions here that do not follow exactly groups (sorted) to
// re-read their streams. It reports whether each of them had made what it follows from a read
// of the groups; one that had not may yet follow a read older than groups.
func (h *Hub) resyncStrays(userID string, groups []string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	all := true
	for s := range h.users[userID] {
		if !s.synced {
			all = false
			continue
		}
		same := len(s.following) == len(groups)
		for _, g := range groups {
			if _, ok := s.following[g]; !ok {
				same = false
				break
			}
		}
		if !same {
			s.offerLocked(nil)
		}
	}
	return all
}
