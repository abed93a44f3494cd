package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/offlinebox/offlinebox/api"
	"github.com/offlinebox/offlinebox/schemas"
)

// runRevoke revokes a user's tokens, or one device's: those issued until
// now are refused by every API process from now on, and their live
// connections close within a few seconds on every node.
func runRevoke(ctx context.Context, args []string, stdout io.Writer) error {
	var user, device string
	var keep time.Duration
	c, err := parseTool("revoke", args, func(fs *flag.FlagSet) {
		fs.StringVar(&user, "user", "", "the user whose tokens are revoked")
		fs.StringVar(&device, "device", "", "only this device's tokens (and its connections); every device when empty")
		fs.DurationVar(&keep, "keep", api.DefaultRevokeKeep, "how long the revocation is kept: at least the longest a token issued before now may live")
	})
	if err != nil {
		return err
	}
	if err := schemas.ValidID("-user", user); err != nil {
		return fmt.Errorf("usage: offlinebox revoke -user U [-device D]: %w", err)
	}
	if device != "" {
		if err := schemas.ValidID("-device", device); err != nil {
			return err
		}
	}
	if keep <= 0 {
		return errors.New("-keep must be positive")
	}
	p, err := open(ctx, c, needs{redis: true})
	if err != nil {
		return err
	}
	defer p.close()
	at := time.Now()
	if err := p.store.Revoke(ctx, user, device, at, keep); err != nil {
		return err
	}
	what := "every device of " + user
	if device != "" {
		what = user + "/" + device
	}
	fmt.Fprintf(stdout, "revoked %s: tokens issued before %s are refused, live connections close within seconds\n",
		what, at.UTC().Format(time.RFC3339Nano))
	return nil
}
