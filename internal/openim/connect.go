package openim

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/cache"
	"github.com/msggate/msggate/internal/chunkstore"
)

// Endpoints says where an OpenIM deployment's stores are, for Connect.
type Endpoints struct {
	// Mongo is OpenIM's MongoDB: URI, Database (OpenIM's default is openim_v3), timeout and
	// command observers. It is opened with chunkstore.ConnectDatabase, which creates nothing.
	Mongo chunkstore.Options
	// RedisURL is OpenIM's Redis, in any form cache.Dial takes (one server, or a cluster).
	RedisURL string
	// Redis carries the observers of the round trips to OpenIM's Redis (ObserveCall,
	// OnRoundTrip); its other fields play no part.
	Redis cache.Options
}

// Connect connects to an OpenIM deployment's MongoDB and Redis and opens the Store over them
// (Open: a database that is not OpenIM's is refused with ErrNotOpenIM). The connections are
// made by msggate's own adapters (chunkstore's connect-only path, cache's dialer), so every
// URI and URL is read by the same rules as msggate's own. Close disconnects both.
func Connect(ctx context.Context, at Endpoints, opts Options) (*Store, error) {
	if at.RedisURL == "" {
		return nil, errors.New("openim: no URL of OpenIM's Redis")
	}
	db, err := chunkstore.ConnectDatabase(at.Mongo)
	if err != nil {
		return nil, fmt.Errorf("OpenIM's MongoDB: %w", err)
	}
	rdb, err := cache.DialClient(at.RedisURL, at.Redis)
	if err != nil {
		_ = db.Client().Disconnect(context.Background())
		return nil, fmt.Errorf("OpenIM's Redis: %w", err)
	}
	s, err := Open(ctx, db, rdb, opts)
	if err != nil {
		_ = rdb.Close()
		_ = db.Client().Disconnect(context.Background())
		return nil, err
	}
	s.owned = true
	return s, nil
}

// Close disconnects from OpenIM's stores when the Store connected itself (Connect); a Store
// opened on the caller's connections (Open) leaves them to the caller.
func (s *Store) Close(ctx context.Context) error {
	if !s.owned {
		return nil
	}
	return errors.Join(s.rdb.Close(), s.db.Client().Disconnect(ctx))
}

// PingMongo checks that OpenIM's MongoDB answers (EUNAVAILABLE when not).
func (s *Store) PingMongo(ctx context.Context) error {
	if err := s.db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		return mongoError("ping", err)
	}
	return nil
}

// PingRedis checks that OpenIM's Redis answers (EUNAVAILABLE when not).
func (s *Store) PingRedis(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return redisError("ping", err)
	}
	return nil
}
