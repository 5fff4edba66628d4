// Package cli holds the product's subcommands, one file each: serve (the default), token,
// group, seed, import, retention and sync-client. The developer tools (bench, loadfault,
// fanout) are not among them: they run from cmd/ and keep the test tooling they need off the
// product's import graph. Each is a function of the command line's arguments and output
// streams; package main picks one. The commands that change the store open the stores as the
// gateway would, with the same flags and environment (internal/gateway's Config).
package cli
