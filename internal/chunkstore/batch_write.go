package chunkstore

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// writeBatch bounds the documents one write command carries. Each command gets the client's
// timeout (Options.Timeout, 10 s by default) of its own, so a long write (a 5,000-member
// group and its 10,000 conversation list entries) is sent as commands that each finish well
// inside it: on the embedded FerretDB, 500 inserts take a fraction of a second.
const writeBatch = 500

// inBatches calls write for consecutive slices of at most writeBatch of n items.
func inBatches(n int, write func(from, to int) error) error {
	for from := 0; from < n; from += writeBatch {
		if err := write(from, min(from+writeBatch, n)); err != nil {
			return err
		}
	}
	return nil
}

// insertNew inserts docs in unordered batches and returns the indexes (into docs) of those
// refused as duplicate keys: they exist already. FerretDB writes an insert batch in one
// SQLite transaction, where an upsert is a find and a write of its own.
func insertNew(ctx context.Context, c *mongo.Collection, op string, docs []any) ([]int, error) {
	var dups []int
	err := inBatches(len(docs), func(from, to int) error {
		_, err := c.InsertMany(ctx, docs[from:to], options.InsertMany().SetOrdered(false))
		if err == nil {
			return nil
		}
		var bwe mongo.BulkWriteException
		if !allDuplicateKeys(err) || !errors.As(err, &bwe) {
			return storeError(op, err)
		}
		for _, we := range bwe.WriteErrors {
			dups = append(dups, from+we.Index)
		}
		return nil
	})
	return dups, err
}

// bulkWriteBatches runs models as unordered bulk writes of at most writeBatch each.
func bulkWriteBatches(ctx context.Context, c *mongo.Collection, op string, models []mongo.WriteModel) error {
	return inBatches(len(models), func(from, to int) error {
		_, err := c.BulkWrite(ctx, models[from:to], options.BulkWrite().SetOrdered(false))
		return storeError(op, err)
	})
}
