package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/syncclient"
)

// SyncClient: msggate sync-client -user U [-url http://localhost:8080] [-token T]
//
// It runs the reference sync client for one user against a running gateway and prints what it
// does until interrupted, then the replica it ended with. Without -token it mints one the way
// the token command does, from -secret (or MSGGATE_JWT_SECRET) or the secret the gateway keeps
// in -data-dir; it never generates a secret, which the gateway would not know.
func SyncClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sync-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "user ID to sync as (required)")
	url := fs.String("url", "http://localhost:8080", "the gateway's URL")
	tok := fs.String("token", "", "bearer token; empty: mint one from -secret or -data-dir")
	var secret gateway.Config
	secret.RegisterSecretFlags(fs)
	full := fs.Bool("full-history", false, "keep every message of every conversation, not only the newest and new ones")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" {
		return errors.New("sync-client: -user is required")
	}
	jwt := *tok
	if jwt == "" {
		if secret.JWTSecret == "" {
			if _, err := os.Stat(gateway.SecretPath(secret.DataDir)); err != nil {
				return fmt.Errorf("sync-client: no token: pass -token, -secret, or the gateway's -data-dir (no jwt-secret in %s)", secret.DataDir)
			}
		}
		s, err := gateway.JWTSecret(secret)
		if err != nil {
			return err
		}
		if jwt, err = auth.Issue(s, *user, false, tokenTTL, time.Now()); err != nil {
			return err
		}
	}
	start := time.Now()
	logf := func(format string, a ...any) {
		fmt.Fprintf(stdout, "%8.3fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	client, err := syncclient.New(*url, jwt, syncclient.Options{
		FullHistory: *full,
		Logf:        logf,
		OnApply: func(a syncclient.Applied) {
			if err := syncclient.CheckInvariants(a); err != nil {
				logf("INVARIANT VIOLATED: %v", err)
			}
		},
	})
	if err != nil {
		return err
	}
	logf("syncing %s with %s (Ctrl-C to stop)", *user, *url)
	runErr := client.Run(ctx)
	printReplica(stdout, client)
	return runErr
}

// printReplica prints the replica's conversations and the requests it cost.
func printReplica(w io.Writer, c *syncclient.Client) {
	r := c.Replica()
	fmt.Fprintf(w, "replica of %s at %s: %d conversations, %d unread\n", r.UserID, r.Token, len(r.Conversations), r.TotalUnread)
	ids := make([]string, 0, len(r.Conversations))
	for id := range r.Conversations {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		conv := r.Conversations[id]
		fmt.Fprintf(w, "  %-32s maxSeq %d minSeq %d readSeq %d unread %d, %d messages held\n",
			id, conv.MaxSeq, conv.MinSeq, conv.ReadSeq, conv.UnreadCount, len(conv.Messages))
	}
	req := c.Requests()
	ops := make([]string, 0, len(req))
	for op, n := range req {
		ops = append(ops, fmt.Sprintf("%s %d", op, n))
	}
	sort.Strings(ops)
	fmt.Fprintf(w, "HTTP requests: %s\n", strings.Join(ops, ", "))
}
