package chunkstore

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

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
		{"a plain error", errors.New("decoding failed"), im.EINTERNAL},
	} {
		if got := im.ErrorCode(storeError("op", c.err)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
