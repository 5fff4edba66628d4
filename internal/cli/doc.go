// Package cli holds msggate's subcommands, one file each: serve (the default), token, group,
// seed, import, retention and sync-client, and the measuring runs bench, loadfault and
// fanout. Each is a function of the command line's arguments and output streams; package main
// picks one. The commands that change the store open the stores as the gateway would, with the
// same flags and environment (internal/gateway's Config).
package cli
