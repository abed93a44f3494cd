package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/offlinebox/offlinebox/redisstore/rebuild"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/verify"
)

// parseTool parses and validates a one-shot tool's flags: the tool waits
// toolWait for the stores, not a server's patience.
func parseTool(name string, args []string, extra func(fs *flag.FlagSet)) (*stackConfig, error) {
	c, _, err := parseStack(name, args, extra)
	if err != nil {
		return nil, err
	}
	c.StoreWait = toolWait
	if err := c.validate(false); err != nil {
		return nil, err
	}
	return c, nil
}

func runMigrate(ctx context.Context, args []string, stdout io.Writer) error {
	c, err := parseTool("migrate", args, nil)
	if err != nil {
		return err
	}
	if err := ensureTopics(ctx, c); err != nil {
		return err
	}
	ch, err := openClickHouse(ctx, c)
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "topics %s, %s, %s, %s and ClickHouse database %s are ready\n",
		schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicReceipts, schemas.TopicDeadLetter, c.ClickHouseDB)
	return nil
}

func runToken(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("token", "USER [-device D] [-ttl D]")
	device := fs.String("device", "", "pin the token to this device id")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token is valid")
	secret := fs.String("jwt-secret", "", "HS256 secret (env OFFLINEBOX_JWT_SECRET, then a running demo's "+defaultEnvFile+"; never printed)")
	var lo logOptions
	lo.bind(fs)
	// Flags may come before or after the user.
	var user string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		user, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := lo.apply(os.Stderr); err != nil {
		return err
	}
	if *secret == "" {
		src, err := loadSources()
		if err != nil {
			return err
		}
		*secret, _, _ = src.lookup("OFFLINEBOX_JWT_SECRET")
	}
	if *secret == "" {
		return fmt.Errorf("no JWT secret: give -jwt-secret, set OFFLINEBOX_JWT_SECRET, or start `offlinebox demo` (it writes %s)", defaultEnvFile)
	}
	if user == "" && fs.NArg() > 0 {
		user = fs.Arg(0)
	}
	if err := schemas.ValidID("user", user); err != nil {
		return fmt.Errorf("usage: offlinebox token USER [-device D]: %w", err)
	}
	if *ttl <= 0 {
		return fmt.Errorf("-ttl: %s is not positive: the token would be expired when minted", *ttl)
	}
	if *device != "" {
		if err := schemas.ValidID("device", *device); err != nil {
			return err
		}
	}
	kr, err := auth.New(auth.Config{Secret: []byte(*secret)})
	if err != nil {
		return fmt.Errorf("-jwt-secret: %w", err)
	}
	tok, err := kr.Mint(user, *device, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

func runVerify(ctx context.Context, args []string, stdout io.Writer) error {
	c, err := parseTool("verify", args, nil)
	if err != nil {
		return err
	}
	p, err := open(ctx, c, needs{redis: true})
	if err != nil {
		return couldNotCheck(err)
	}
	defer p.close()
	rep, err := verifyStore(ctx, p)
	if err != nil {
		return couldNotCheck(err)
	}
	fmt.Fprint(stdout, rep.String())
	if !rep.OK() {
		return errVerifyFailed
	}
	return nil
}

// couldNotCheck makes verify exit 2: nothing was found broken, but the
// check did not run to its end.
func couldNotCheck(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: 2, err: err}
}

func verifyStore(ctx context.Context, p *processes) (*verify.Report, error) {
	checker, err := verify.New(verify.Config{}, p.store, p.hot)
	if err != nil {
		return nil, err
	}
	return checker.Run(ctx)
}

func runRebuild(ctx context.Context, args []string, stdout io.Writer) error {
	var conv string
	var all, force bool
	c, err := parseTool("rebuild", args, func(fs *flag.FlagSet) {
		fs.StringVar(&conv, "conv", "", "the conversation to rebuild")
		fs.BoolVar(&all, "all", false, "rebuild every conversation ClickHouse knows")
		fs.BoolVar(&force, "force", false, "rebuild even when ClickHouse is behind the Redis counter")
	})
	if err != nil {
		return err
	}
	if (conv == "") == !all {
		return errors.New("give exactly one of -conv ID or -all")
	}
	policies, err := loadPolicies(c)
	if err != nil {
		return err
	}
	if conv != "" {
		if err := schemas.ValidID("-conv", conv); err != nil {
			return err
		}
	}
	p, err := open(ctx, c, needs{redis: true, clickhouse: true})
	if err != nil {
		return err
	}
	defer p.close()
	opt := rebuild.Options{Force: force}
	if policies != nil {
		// The longest windows a policy can give: expiry trims each
		// conversation to its own on its next sweep.
		opt.Retention = policies.Current().LongestInboxWindows()
	}
	if conv != "" {
		res, err := rebuild.New(p.store).Rebuild(ctx, p.ch, conv, opt)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, describeRebuild(res))
		return nil
	}
	failed := 0
	n, err := rebuild.New(p.store).RebuildAll(ctx, p.ch, p.ch, opt, func(res rebuild.Result, err error) {
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "%s: %v\n", res.Conv, err)
			return
		}
		fmt.Fprintln(stdout, describeRebuild(res))
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d conversations rebuilt, %d refused\n", n, failed)
	if failed > 0 {
		return fmt.Errorf("%d conversations were not rebuilt", failed)
	}
	return nil
}

func describeRebuild(r rebuild.Result) string {
	s := fmt.Sprintf("%s: seq %d, timeline %d..%d (%d entries), epoch %d", r.Conv, r.Seq, r.First, r.Seq, r.Entries, r.Epoch)
	if r.NewEpoch {
		s += " (new: clients rebase)"
	}
	switch r.Members {
	case rebuild.MembersKept:
		// Redis still held the member list: the rebuild left it as it was.
		return s + ", member list left as Redis holds it"
	case rebuild.MembersRestored:
		return s + fmt.Sprintf(", %d members restored from ClickHouse", r.MemberCount)
	}
	return s + ", members UNKNOWN: restore them by hand"
}

func runHistorySQL(ctx context.Context, args []string, stdout io.Writer) error {
	c, fs, err := parseStackUsage("history sql", `"SELECT ..." [flags]`, args, nil)
	if err != nil {
		return err
	}
	c.StoreWait = toolWait
	if fs.NArg() != 1 {
		return errors.New(`usage: offlinebox history sql "SELECT ..."`)
	}
	if err := c.validate(false); err != nil {
		return err
	}
	ch, err := openClickHouse(ctx, c)
	if err != nil {
		return err
	}
	defer ch.Close()
	cols, rows, err := ch.Query(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(printableRow(cols, r), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "(%d rows)\n", len(rows))
	return nil
}

// runProbe GETs a URL and succeeds on a 2xx answer: the healthcheck of the
// containers, whose image has no curl.
func runProbe(ctx context.Context, args []string, _ io.Writer) error {
	fs := newFlagSet("probe", "URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: offlinebox probe URL")
	}
	url := fs.Arg(0)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

// printableRow renders cells a terminal cannot show as a short marker:
// a body of a row whose sealed_epoch is set as <sealed N B>, any other
// cell that is not printable text as <binary N B>.
func printableRow(cols, row []string) []string {
	sealed := false
	for i, c := range cols {
		if c == "sealed_epoch" && i < len(row) && row[i] != "0" {
			sealed = true
		}
	}
	out := make([]string, len(row))
	for i, v := range row {
		out[i] = v
		switch {
		case sealed && i < len(cols) && cols[i] == "body":
			out[i] = fmt.Sprintf("<sealed %d B>", len(v))
		case !printable(v):
			out[i] = fmt.Sprintf("<binary %d B>", len(v))
		}
	}
	return out
}

// printable: valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
