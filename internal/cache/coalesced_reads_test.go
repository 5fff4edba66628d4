package cache_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/im"
)

// coalescedUsers is how many users read at once in the coalesced-read tests: each reads its
// own states, which differ from every other user's, so that an answer handed to the wrong
// request shows. Reads share round trips only while more are under way than the process has
// CPUs, so there are several times as many.
var coalescedUsers = max(32, 4*runtime.GOMAXPROCS(0))

func coalescedUser(i int) string { return fmt.Sprintf("u%02d", i) }
func ownConversation(i int) string {
	id, _ := im.SingleConversationID("zed", coalescedUser(i))
	return id
}

// fillCoalescedStates gives each user a read state of its own in a shared group and in a single
// chat of its own, and a cached conversation list of the two; it returns each user's list.
func fillCoalescedStates(t *testing.T, e *env) []cache.ConversationList {
	t.Helper()
	convs := []cache.ConversationRaise{{ConversationID: "sg_all", MaxSeq: ptr(1000), MinSeq: ptr(1), LastTime: ptr(5)}}
	var users []cache.UserRaise
	for i := range coalescedUsers {
		convs = append(convs, cache.ConversationRaise{ConversationID: ownConversation(i), MaxSeq: ptr(int64(100 + i)), MinSeq: ptr(1), LastTime: ptr(int64(i))})
		users = append(users,
			cache.UserRaise{UserID: coalescedUser(i), ConversationID: "sg_all", ReadSeq: ptr(int64(i)), UserMinSeq: ptr(0)},
			cache.UserRaise{UserID: coalescedUser(i), ConversationID: ownConversation(i), ReadSeq: ptr(int64(50 + i)), UserMinSeq: ptr(0)})
	}
	if err := e.cache.RaiseStates(e.ctx, convs, users); err != nil {
		t.Fatal(err)
	}
	lists := make([]cache.ConversationList, coalescedUsers)
	for i := range coalescedUsers {
		u := coalescedUser(i)
		if err := e.cache.AddToConversationLists(e.ctx, map[string][]string{u: {}}, 10); err != nil {
			t.Fatal(err)
		}
		l, err := e.cache.GetConversationList(e.ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.cache.FillConversationList(e.ctx, u, l.Version, []string{"sg_all", ownConversation(i)}); err != nil {
			t.Fatal(err)
		}
		if lists[i], err = e.cache.GetConversationList(e.ctx, u); err != nil || !lists[i].Cached {
			t.Fatalf("%s's list: %+v, %v", u, lists[i], err)
		}
		slices.Sort(lists[i].IDs) // sg_all first
	}
	return lists
}

// checkCoalescedStates fails unless states are user i's in the conversations of its list.
func checkCoalescedStates(i int, convs []cache.ConversationState, users []cache.UserState) error {
	if len(convs) != 2 || len(users) != 2 {
		return fmt.Errorf("%d conversation and %d user states, want 2 and 2", len(convs), len(users))
	}
	if convs[0].MaxSeq != 1000 || convs[1].MaxSeq != int64(100+i) || !convs[0].Cached || !convs[1].Cached {
		return fmt.Errorf("conversation states %+v", convs)
	}
	if users[0].ReadSeq != int64(i) || users[1].ReadSeq != int64(50+i) || !users[0].Cached || !users[1].Cached {
		return fmt.Errorf("read states %+v, want read seqs %d and %d", users, i, 50+i)
	}
	return nil
}

// Ensure that state reads made at the same time on one Redis node share round trips (a round
// trip carries the read states of several users), that each read still gets its own user's
// states, and that with CoalescedReads negative every read takes a round trip of its own.
func TestCoalescedReads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limit  int
		shared bool
	}{{"default", 0, true}, {"off", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := openSingle(t)
			lists := fillCoalescedStates(t, e)
			c := cache.New(e.rdb, cache.Options{Prefix: "t:", CoalescedReads: tc.limit})
			e.trips.Take()

			const rounds = 20
			start := make(chan struct{})
			errs := make(chan error, coalescedUsers)
			var wg sync.WaitGroup
			for i := range coalescedUsers {
				wg.Go(func() {
					<-start
					for range rounds {
						res, err := c.GetStatesMany(e.ctx, []cache.StateQuery{{UserID: coalescedUser(i), ConversationIDs: lists[i].IDs}}, false)
						if err == nil {
							err = checkCoalescedStates(i, res.Conversations[0], res.Users[0])
						}
						if err != nil {
							errs <- fmt.Errorf("GetStatesMany of %s: %w", coalescedUser(i), err)
							return
						}
						list, states, err := c.GetConversationListWithStates(e.ctx, coalescedUser(i), lists[i])
						if err == nil && (!slices.Equal(list.IDs, lists[i].IDs) || list.Version != lists[i].Version) {
							err = fmt.Errorf("list %+v, want %+v", list, lists[i])
						}
						if err == nil {
							err = checkCoalescedStates(i, states.Conversations[0], states.Users[0])
						}
						if err != nil {
							errs <- fmt.Errorf("GetConversationListWithStates of %s: %w", coalescedUser(i), err)
							return
						}
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}

			reads := 2 * rounds * coalescedUsers
			trips := e.trips.Take()
			most := 0 // the most users' read states one round trip carried
			for _, trip := range trips {
				n := 0
				for _, cmd := range trip {
					if strings.HasPrefix(cmd, "hmget ") {
						n++
					}
				}
				most = max(most, n)
			}
			t.Logf("%d reads in %d round trips, at most %d reads in one", reads, len(trips), most)
			if tc.shared && (most < 2 || len(trips) >= reads) {
				t.Fatalf("%d reads at once took %d round trips, none shared by two reads", reads, len(trips))
			}
			if !tc.shared && (most != 1 || len(trips) != reads) {
				t.Fatalf("with coalescing off, %d reads took %d round trips (at most %d reads in one), want one each", reads, len(trips), most)
			}
		})
	}
}

// Ensure a shared read reports Redis's failure as unavailable, never as a miss: while Redis is
// paused, reads made at once end with their contexts as EUNAVAILABLE; after it, they are
// answered again (the shared round trips are not left stuck).
func TestCoalescedReadsWhileRedisStalls(t *testing.T) {
	t.Parallel()
	e := openSingle(t)
	lists := fillCoalescedStates(t, e)
	const pause = 1500 * time.Millisecond
	if err := e.rdb.Do(e.ctx, "client", "pause", pause.Milliseconds(), "all").Err(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	var wg sync.WaitGroup
	results := make([]error, coalescedUsers)
	took := make([]time.Duration, coalescedUsers)
	for i := range coalescedUsers {
		wg.Go(func() {
			defer func() { took[i] = time.Since(paused) }()
			ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
			defer cancel()
			res, err := e.cache.GetStatesMany(ctx, []cache.StateQuery{{UserID: coalescedUser(i), ConversationIDs: lists[i].IDs}}, false)
			if err == nil {
				// A read that took a pipeline of its own waits for Redis past its context
				// (go-redis bounds it with its read timeout): it must then be right.
				err = checkCoalescedStates(i, res.Conversations[0], res.Users[0])
			} else if code := im.ErrorCode(err); code != im.EUNAVAILABLE {
				err = fmt.Errorf("code %q, want %q: %w", code, im.EUNAVAILABLE, err)
			} else {
				err = nil
			}
			results[i] = err
		})
	}
	wg.Wait()
	for i, err := range results {
		if err != nil {
			t.Errorf("%s while Redis was paused: %v", coalescedUser(i), err)
		}
	}
	if fastest := slices.Min(took); fastest >= pause/2 {
		t.Fatalf("the fastest read took %v of a %v pause: none stopped at its context's end", fastest, pause)
	}
	time.Sleep(time.Until(paused.Add(pause)))
	var after sync.WaitGroup
	for i := range coalescedUsers {
		after.Go(func() {
			res, err := e.cache.GetStatesMany(e.ctx, []cache.StateQuery{{UserID: coalescedUser(i), ConversationIDs: lists[i].IDs}}, false)
			if err == nil {
				err = checkCoalescedStates(i, res.Conversations[0], res.Users[0])
			}
			if err != nil {
				t.Errorf("%s after the pause: %v", coalescedUser(i), err)
			}
		})
	}
	after.Wait()
}
