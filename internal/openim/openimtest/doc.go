// Package openimtest writes an OpenIM v3.8 deployment's records into a MongoDB database and a
// Redis server the way OpenIM v3.8.3 itself writes them, for tests of msggate's OpenIM mode.
// Every operation names the OpenIM function whose writes it reproduces: the same collections,
// field names, field order and BSON types (int64 where OpenIM writes int64, int32 where its
// $setOnInsert defaults write Go int zeros), the same index definitions, and the same Redis keys,
// hash fields, value encodings and TTLs (rockscache hashes included). It is imported only by tests
// and test tooling: _test files, internal/gateway/gatewaytest, and the bench, which fills an
// OpenIM deployment to measure OpenIM mode.
package openimtest
