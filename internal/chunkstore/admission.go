package chunkstore

import (
	"context"
	"errors"

	"github.com/msggate/msggate/internal/admission"
	"github.com/msggate/msggate/internal/im"
)

// Acquirer lets operations through to MongoDB or refuses them: *admission.Limiter is one.
// Each Store operation (one call, however many commands it sends, leases included) holds one
// slot, so an operation is never refused half-way; an operation that calls another holds one.
type Acquirer interface {
	Acquire(ctx context.Context) (context.Context, func(), error)
}

// admit waits until the store is prepared (background_start.go), then takes a slot of Options.Admission for one operation; done gives it back. A refusal is
// EUNAVAILABLE with the admission's error, and its retry hint, as its cause.
func (s *Store) admit(ctx context.Context) (context.Context, func(), error) {
	if err := s.waitReady(ctx); err != nil {
		return ctx, nil, err
	}
	if s.admission == nil {
		return ctx, func() {}, nil
	}
	actx, done, err := s.admission.Acquire(ctx)
	switch {
	case err == nil:
		return actx, done, nil
	case errors.Is(err, admission.ErrOverloaded):
		return ctx, nil, &im.Error{Code: im.EUNAVAILABLE, Message: "message store is overloaded", Cause: err}
	}
	return ctx, nil, storeError("wait for the store", err)
}
