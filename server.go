// Command msggate is a GraphQL gateway for instant-messaging history stored in MongoDB as
// seq-addressed chunks of 100 messages, with Redis in front. This file only picks the
// subcommand (internal/cli) and turns signals into a graceful shutdown; internal/gateway wires
// the parts together.
//
//	msggate [serve] [flags]     run the gateway (the default)
//	msggate token -user U       print a bearer token for user U
//	msggate group|seed|import|retention|sync-client ...   see README.md
//	msggate healthcheck         ask the gateway's /healthz (the container image's HEALTHCHECK)
//
// The developer tools that measure it (bench, loadfault, fanout) are separate commands under
// cmd/, run from a source checkout with `go run ./cmd/NAME`, so that this binary carries no
// test tooling.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/msggate/msggate/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal starts a graceful shutdown; a second one then kills at once.
	context.AfterFunc(ctx, stop)
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "msggate:", err)
		os.Exit(1)
	}
}

// run runs the subcommand args name (serve when args start with a flag, or are empty).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return cli.Serve(ctx, args, stdout, stderr)
	case "token":
		return cli.Token(ctx, args, stdout, stderr)
	case "group":
		return cli.Group(ctx, args, stdout, stderr)
	case "seed":
		return cli.Seed(ctx, args, stdout, stderr)
	case "import":
		return cli.Import(ctx, args, stdout, stderr)
	case "retention":
		return cli.Retention(ctx, args, stdout, stderr)
	case "sync-client":
		return cli.SyncClient(ctx, args, stdout, stderr)
	case "reindex":
		return cli.Reindex(ctx, args, stdout, stderr)
	case "healthcheck":
		return cli.Healthcheck(ctx, args, stdout, stderr)
	case "bench", "loadfault", "fanout":
		return fmt.Errorf("%s is a developer tool, not a command of msggate: run it from a source checkout with go run ./cmd/%s", cmd, cmd)
	}
	return fmt.Errorf("unknown command %q (commands: serve, token, group, seed, import, retention, reindex, sync-client, healthcheck)", cmd)
}
