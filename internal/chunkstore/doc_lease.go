package chunkstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/im"
)

// CollectionLeases holds the lease documents that serialise updates of one document across
// processes on a FerretDB backend (see leases). It is empty while nobody writes.
const CollectionLeases = "doc_lease"

// DefaultLockLease is how long a lease is valid (Options.LockLease): a process that dies
// holding one blocks the updates of its documents for at most this long.
const DefaultLockLease = 10 * time.Second

// leases serialise updates of one document across processes sharing a FerretDB.
//
// FerretDB has no transactions, no atomic update and no atomic conditional delete, but an
// insert is atomic: SQLite's unique index on _id decides between two inserts of one _id. A
// lease is therefore a document {_id: "<collection>|<key>", owner, expires}: whoever inserts
// it holds the lease, and deletes it (by _id and owner) when done. A lease whose holder died is
// taken over once its expiry has passed on the waiter's clock. Two waiters might both see it
// expired and both delete it, the second deleting the lease the first has just taken; so a
// take-over first inserts a marker {_id: "takeover|<lease _id>|<stale owner>"}, which only
// one of them can. Markers stay (one small document per lease taken over after a crash) so
// that a late waiter can never take over the same stale lease again. A marker older than a
// take-over may take (its waiter died between the marker and the delete) is followed by the
// next generation's, "takeover|<lease _id>|<stale owner>|<n>", again decided by the insert.
//
// Keys are taken in sorted order, so that two writers needing several documents cannot wait
// for each other. The update itself must end before the lease expires: lockDocs bounds it.
type leases struct {
	coll  *mongo.Collection
	ttl   time.Duration
	owner string // this Store's random prefix of lease owners
	n     atomic.Uint64
}

type leaseDoc struct {
	ID      string `bson:"_id"`
	Owner   string `bson:"owner"`
	Expires int64  `bson:"expires"` // ms since the epoch
}

func newLeases(db *mongo.Database, ttl time.Duration) *leases {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &leases{coll: db.Collection(CollectionLeases), ttl: ttl, owner: hex.EncodeToString(b)}
}

// acquire takes the leases on ids (sorted, distinct) and returns the function that gives them
// back, and when the first of them expires. It waits while another process holds one, until
// ctx ends.
func (l *leases) acquire(ctx context.Context, ids []string) (release func(), expires time.Time, err error) {
	owner := l.owner + "-" + strconv.FormatUint(l.n.Add(1), 10)
	held := 0
	release = func() { l.release(ctx, owner, ids[:held]) }
	var backoff time.Duration
	seenExpiry := map[string]int64{} // what this waiter last read of a busy lease's expiry
	for held < len(ids) {
		tried := time.Now()
		n, busy, err := l.insert(ctx, owner, ids[held:], tried)
		if n > 0 && held == 0 {
			expires = tried.Add(l.ttl)
		}
		held += n
		if err != nil {
			// The insert may have been applied although its answer was lost: give back every
			// lease of this owner (the owner filter leaves everyone else's alone).
			l.release(ctx, owner, ids)
			return nil, time.Time{}, err
		}
		if !busy {
			break
		}
		id := ids[held]
		if now := time.Now().UnixMilli(); now >= seenExpiry[id] {
			// Only once the lease could have expired is it read again: a busy lease costs the
			// waiter one insert per try, not two commands.
			cur, err := l.find(ctx, id)
			if err != nil {
				release()
				return nil, time.Time{}, err
			}
			if cur == nil {
				continue // released meanwhile: try again at once
			}
			if cur.Expires > now {
				seenExpiry[id] = cur.Expires
			} else if took, err := l.takeOver(ctx, *cur); err != nil {
				release()
				return nil, time.Time{}, err
			} else if took {
				continue
			} // else another waiter is taking it over: wait like for a live lease
		}
		backoff = min(max(2*backoff, 2*time.Millisecond), 50*time.Millisecond)
		wait := backoff/2 + mrand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			release()
			return nil, time.Time{}, im.Unavailable("message store", fmt.Errorf("waiting for another writer of %s: %w", id, context.Cause(ctx)))
		case <-time.After(wait):
		}
	}
	return release, expires, nil
}

// insert inserts the leases of ids in order and stops at the first that exists: it reports
// how many it took and whether it stopped at a busy one.
func (l *leases) insert(ctx context.Context, owner string, ids []string, now time.Time) (int, bool, error) {
	expires := now.Add(l.ttl).UnixMilli()
	docs := make([]leaseDoc, len(ids))
	for i, id := range ids {
		docs[i] = leaseDoc{ID: id, Owner: owner, Expires: expires}
	}
	_, err := l.coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(true))
	if err == nil {
		return len(ids), false, nil
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) == 1 {
		if we := bwe.WriteErrors[0]; we.Code == 11000 && we.Index >= 0 && we.Index < len(ids) {
			return we.Index, true, nil
		}
	}
	return 0, false, storeError("take lease", err)
}

func (l *leases) find(ctx context.Context, id string) (*leaseDoc, error) {
	var d leaseDoc
	err := l.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, storeError("read lease", err)
	}
	return &d, nil
}

// takeOver removes an expired lease and reports true, unless another waiter is taking it over
// already. Once its marker is in, this waiter alone may remove the stale lease: if it gave up
// half-way, no one ever could, and every update of the document would wait forever. So the
// two steps run to their end on a context of their own (up to twice the lease), whatever
// happens to the caller's, and an insert whose answer was lost is read back.
func (l *leases) takeOver(ctx context.Context, stale leaseDoc) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), takeOverTime(l.ttl))
	defer cancel()
	// A marker older than a take-over may take belongs to a waiter that died half-way (killed
	// between its marker and the delete): the next generation's marker is inserted instead,
	// and again only one waiter can. Markers are only ever inserted, so the insert alone
	// decides, as it does for leases.
	for gen := 0; ; gen++ {
		id := "takeover|" + stale.ID + "|" + stale.Owner
		if gen > 0 {
			id += "|" + strconv.Itoa(gen)
		}
		marker := leaseDoc{ID: id, Owner: l.owner, Expires: time.Now().UnixMilli()}
		_, err := l.coll.InsertOne(ctx, marker)
		if err == nil {
			break
		}
		cur, ferr := l.find(ctx, id)
		if ferr != nil {
			return false, ferr
		}
		switch {
		case cur != nil && cur.Owner == l.owner && cur.Expires == marker.Expires:
			// The insert was applied although its answer was lost.
		case !mongo.IsDuplicateKeyError(err) && cur == nil:
			return false, storeError("take over lease", err)
		case cur != nil && time.Since(time.UnixMilli(cur.Expires)) <= takeOverTime(l.ttl):
			return false, nil // another waiter is taking it over
		default:
			continue // that waiter died: next generation
		}
		break
	}
	wait := 50 * time.Millisecond
	for {
		_, err := l.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: stale.ID}, {Key: "owner", Value: stale.Owner}})
		if err == nil {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, storeError("take over lease", err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// takeOverTime bounds one take-over of a lease whose lease time is ttl.
func takeOverTime(ttl time.Duration) time.Duration { return 2 * ttl }

// release deletes the leases owner holds on ids. It runs even when ctx has ended (the update
// is over either way); a lease it fails to delete expires.
func (l *leases) release(ctx context.Context, owner string, ids []string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	filter := bson.D{{Key: "_id", Value: ids[0]}, {Key: "owner", Value: owner}}
	if len(ids) > 1 {
		filter[0].Value = bson.D{{Key: "$in", Value: ids}}
	}
	_, _ = l.coll.DeleteMany(ctx, filter)
}
