package chunkstore

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/msggate/msggate/internal/im"
)

// FindChunks reads the chunks with the given doc IDs: by _id where chunks have natural keys
// (findByIDs), else in one $in query on doc_id. The result is aligned
// with docIDs: result[i] is the chunk docIDs[i] names, or nil when no such document exists.
// Whole chunks are read on purpose: FerretDB supports no $slice projection, and a page of
// history needs most of a chunk anyway.
func (s *Store) FindChunks(ctx context.Context, docIDs []string) ([]*im.Chunk, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	out := make([]*im.Chunk, len(docIDs))
	if len(docIDs) == 0 {
		return out, nil
	}
	var found []*im.Chunk
	if s.natural[CollectionChunks] {
		found, err = findByIDs[*im.Chunk](ctx, s, s.chunks, "find chunks", docIDs)
	} else {
		found, err = findAll[*im.Chunk](ctx, s.chunks, "find chunks", bson.D{{Key: "doc_id", Value: bson.D{{Key: "$in", Value: docIDs}}}})
	}
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*im.Chunk, len(found))
	for _, c := range found {
		byID[c.DocID] = c
	}
	for i, id := range docIDs {
		out[i] = byID[id]
	}
	return out, nil
}

// Empty reports whether the store holds no chunk at all (a new installation).
func (s *Store) Empty(ctx context.Context) (bool, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	n, err := s.chunks.CountDocuments(ctx, bson.D{}, options.Count().SetLimit(1))
	if err != nil {
		return false, storeError("count chunks", err)
	}
	return n == 0, nil
}
