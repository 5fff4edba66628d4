package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/msggate/msggate/internal/auth"
	"github.com/msggate/msggate/internal/gateway"
)

// tokenTTL is how long the tokens the commands mint are valid by default.
const tokenTTL = 24 * time.Hour

// Token: msggate token -user U [-admin] [-ttl 24h]
// It prints a bearer token signed with the secret the gateway with the same flags and
// environment uses.
func Token(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg gateway.Config
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	user := fs.String("user", "", "user ID the token is for (required)")
	admin := fs.Bool("admin", false, "give the token the admin role")
	ttl := fs.Duration("ttl", tokenTTL, "how long the token is valid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" {
		return errors.New("token: -user is required")
	}
	if cfg.OpenIM.Enabled {
		return errors.New("token: with -openim clients present the tokens OpenIM issues; msggate mints none")
	}
	secret, err := gateway.JWTSecret(cfg)
	if err != nil {
		return err
	}
	t, err := auth.Issue(secret, *user, *admin, *ttl, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, t)
	return nil
}
