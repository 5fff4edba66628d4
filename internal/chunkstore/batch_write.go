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

// updateBatch bounds the update statements one update command carries, far below writeBatch.
// FerretDB 1.24 keeps the query of each update statement open (one of the database's 100
// SQLite connections) until the whole command ends, and its write needs one more: a command
// of 99 statements that match takes the whole pool, slower per statement as it grows, and at
// 100 it waits for a connection that only its own end would free, until the client's timeout
// (issue 31: an import batch over 100 conversations). Concurrent commands share the pool, so
// each must take a small part of it.
const updateBatch = 16

// inBatches calls write for consecutive slices of at most writeBatch of n items.
func inBatches(n int, write func(from, to int) error) error {
	return inBatchesOf(writeBatch, n, write)
}

// inBatchesOf calls write for consecutive slices of at most size of n items.
func inBatchesOf(size, n int, write func(from, to int) error) error {
	for from := 0; from < n; from += size {
		if err := write(from, min(from+size, n)); err != nil {
			return err
		}
	}
	return nil
}

// insertNew inserts docs in unordered batches and returns the indexes (into docs) of those
// refused as duplicate keys: they exist already. FerretDB writes an insert batch in one
// SQLite transaction, where an upsert is a find and a write of its own.
func insertNew(ctx context.Context, c *mongo.Collection, op string, docs []any) ([]int, error) {
	return insertNewOf(ctx, c, op, docs, writeBatch)
}

// insertNewOf is insertNew with batches of at most size documents.
func insertNewOf(ctx context.Context, c *mongo.Collection, op string, docs []any, size int) ([]int, error) {
	var dups []int
	err := inBatchesOf(size, len(docs), func(from, to int) error {
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

// bulkWriteBatches runs update models as unordered bulk writes of at most updateBatch each.
func bulkWriteBatches(ctx context.Context, c *mongo.Collection, op string, models []mongo.WriteModel) error {
	return inBatchesOf(updateBatch, len(models), func(from, to int) error {
		_, err := c.BulkWrite(ctx, models[from:to], options.BulkWrite().SetOrdered(false))
		return storeError(op, err)
	})
}
