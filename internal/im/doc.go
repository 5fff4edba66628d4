// Package im holds msggate's domain: the three-layer message model (chunk, slot, message),
// seq addressing, conversation IDs, group members and who may do what, categorisation of
// incoming messages, unread arithmetic and the error codes every other package speaks. It
// imports nothing but the standard library, so the storage, cache and GraphQL packages can all
// depend on it without depending on each other.
package im
