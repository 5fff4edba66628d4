package chunkstore

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// isFerretDB asks the server's buildInfo whether it is FerretDB: FerretDB answers with the
// MongoDB version it imitates plus fields of its own ("ferretdbVersion", "ferretdbFeatures"),
// which MongoDB never sends.
func isFerretDB(ctx context.Context, client *mongo.Client) (bool, error) {
	var info bson.M
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return false, storeError("buildInfo", err)
	}
	_, ferret := info["ferretdbVersion"]
	return ferret, nil
}

// SharedFerretDB reports whether the store takes a lease document for each update because
// it runs on a FerretDB other processes may write to (see leases); the gateway says so once
// the store is prepared (false until then).
func (s *Store) SharedFerretDB() bool {
	select {
	case <-s.Ready():
		return s.leases != nil
	default:
		return false
	}
}
