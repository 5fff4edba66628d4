// Package cli holds msggate's subcommands, one file each: serve (the default), token, group,
// seed, import, retention, reindex, sync-client and healthcheck (the container image's probe). Each is a function of the command line's arguments
// and output streams; package main picks one. The commands that change the store open the
// stores as the gateway would, with the same flags and environment (internal/gateway's
// Config). The developer tools that measure msggate (bench, loadfault, fanout) are not
// commands of the product: they live under cmd/, so that its binary carries no test tooling.
package cli
