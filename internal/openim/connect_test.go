package openim_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/chunkstore"
	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/openim"
	"github.com/msggate/msggate/internal/openim/openimtest"
)

// Connect reaches a deployment by URI and URL alone and reads it; on a database that is not
// OpenIM's it fails with ErrNotOpenIM and leaves the database as it was.
func TestConnect(t *testing.T) {
	t.Parallel()
	m := testenv.Mongo(t)
	rs := testenv.Redis(t)
	fixtureRedis := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer fixtureRedis.Close()
	d := openimtest.New(t, m.Connect(t, nil), fixtureRedis)
	chat := openimtest.SingleConversationID("a", "b")
	d.Send(chat, openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("hi")))

	s, err := openim.Connect(ctx, openim.Endpoints{
		Mongo:    chunkstore.Options{URI: m.URI(), Database: m.Database()},
		RedisURL: rs.URL(),
	}, openim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.UserConversations(ctx, "b")
	if err != nil || len(list) != 1 || list[0].ConversationID != chat || list[0].MaxSeq != 1 {
		t.Errorf("UserConversations over Connect: %+v, %v", list, err)
	}
	if err := s.PingMongo(ctx); err != nil {
		t.Error(err)
	}
	if err := s.PingRedis(ctx); err != nil {
		t.Error(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}

	empty := testenv.Mongo(t)
	_, err = openim.Connect(ctx, openim.Endpoints{
		Mongo:    chunkstore.Options{URI: empty.URI(), Database: empty.Database()},
		RedisURL: rs.URL(),
	}, openim.Options{})
	if !errors.Is(err, openim.ErrNotOpenIM) {
		t.Fatalf("Connect to an empty database: %v, want ErrNotOpenIM", err)
	}
	if names, _ := empty.Connect(t, nil).ListCollectionNames(ctx, bson.D{}); len(names) != 0 {
		t.Errorf("Connect created collections %v", names)
	}
}
