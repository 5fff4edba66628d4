package openim

import (
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// OpenIM keeps its cached values with rockscache (github.com/dtm-labs/rockscache v0.1.1,
// client.go): each key is a hash whose field "value" holds the value, next to "lockUntil" and
// "lockOwner". TagAsDeleted, rockscache's delete, keeps the value but sets lockUntil to 0 and
// lets the key expire after a delay; a reader filling the key sets lockUntil to a future time.
// OpenIM runs rockscache with StrongConsistency (pkg/common/storage/cache/redis/batch_handler.go
// GetRocksCacheOptions), under which a value is served only while the hash has no lockUntil
// at all: a tagged or locked value is stale and the source (MongoDB) is read instead. An empty
// value is rockscache's cached "not found".
var rocksFields = []string{"value", "lockUntil"}

// rocksValue reads the reply of HMGET key value lockUntil: the value and whether OpenIM itself
// would serve it.
func rocksValue(cmd *redis.SliceCmd) (string, bool, error) {
	vals, err := cmd.Result()
	if err != nil && err != redis.Nil {
		return "", false, err
	}
	if len(vals) != 2 || vals[1] != nil {
		return "", false, nil
	}
	v, ok := vals[0].(string)
	if !ok || v == "" {
		return "", false, nil
	}
	return v, true, nil
}

// rocksInt reads a rockscache-held integer (OpenIM encodes int64 values as decimal JSON).
func rocksInt(cmd *redis.SliceCmd) (int64, bool, error) {
	v, ok, err := rocksValue(cmd)
	if err != nil || !ok {
		return 0, false, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return 0, false, recordError(fmt.Sprint("rockscache value of ", cmd.Args()[1]), perr)
	}
	return n, true, nil
}
