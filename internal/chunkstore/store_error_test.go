package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/msggate/msggate/internal/admission"

	"github.com/msggate/msggate/internal/im"
)

// Ensure a store that answers too slowly is reported as unavailable (a client may retry), and
// a command the server rejects stays an internal error.
func TestStoreErrorCodes(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"MongoDB's MaxTimeMSExpired", mongo.CommandError{Code: 50, Message: "operation exceeded time limit"}, im.EUNAVAILABLE},
		{"FerretDB's deadline", mongo.CommandError{Code: 1, Name: "InternalError",
			Message: "[msg_findandmodify.go:137 handler.(*Handler).findAndModifyDocument] context deadline exceeded"}, im.EUNAVAILABLE},
		{"a rejected command", mongo.CommandError{Code: 2, Name: "BadValue", Message: "unknown operator"}, im.EINTERNAL},
		{"no server to select", topology.ServerSelectionError{Wrapped: errors.New("server selection timeout")}, im.EUNAVAILABLE},
		{"no pooled connection in time", topology.WaitQueueTimeoutError{Wrapped: errors.New("timed out")}, im.EUNAVAILABLE},
		{"a closed client", topology.ErrTopologyClosed, im.EUNAVAILABLE},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, im.EUNAVAILABLE},
		{"connection cut", fmt.Errorf("read: %w", io.EOF), im.EUNAVAILABLE},
		{"a server shutting down", mongo.CommandError{Code: 91, Name: "ShutdownInProgress"}, im.EUNAVAILABLE},
		{"FerretDB's SQLite busy", mongo.CommandError{Code: 1, Name: "InternalError", Message: "sqlite: step: database is locked (5) (SQLITE_BUSY)"}, im.EUNAVAILABLE},
		{"our own cancellation", context.Canceled, im.EUNAVAILABLE},
		{"an admission refusal", &admission.RefusedError{Name: "message store", RetryAfter: time.Second}, im.EUNAVAILABLE},
		{"a plain error", errors.New("decoding failed"), im.EINTERNAL},
	} {
		if got := im.ErrorCode(storeError("op", c.err)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
