package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/retention"
	"github.com/offlinebox/offlinebox/schemas"
)

// policyPoll is how often a running expiry worker looks whether its policy
// file changed (SIGHUP reloads at once).
const policyPoll = 10 * time.Second

// loadPolicies reads the -retention-policy file before any store is
// opened, so a bad file refuses the start at once, naming the line; nil
// when none is configured (the built-in retention applies).
func loadPolicies(c *stackConfig) (*retention.Source, error) {
	if c.RetentionPolicy == "" {
		return nil, nil
	}
	src, err := retention.Load(c.RetentionPolicy)
	if err != nil {
		return nil, err
	}
	slog.Info("retention policy loaded", "file", src.Path(), "policies", len(src.Current().Policies))
	return src, nil
}

// openPolicyServer is openServer for a process that applies the retention
// policy (expiry, all): the file is read before anything is opened, so a
// bad policy stops the process at once, and put in force once the stores
// are open.
func openPolicyServer(ctx context.Context, c *stackConfig, n needs) (*health, *processes, error) {
	policies, err := loadPolicies(c)
	if err != nil {
		return nil, nil, err
	}
	h, p, err := openServer(ctx, c, n)
	if err != nil {
		return nil, nil, err
	}
	if err := p.usePolicies(ctx, policies); err != nil {
		p.close()
		return nil, nil, err
	}
	return h, p, nil
}

// usePolicies makes src the process's policy (nil: built-in), judges it
// against the policy last confirmed in Redis (a file that shortens it
// unconfirmed refuses the start) and registers its metrics.
func (p *processes) usePolicies(ctx context.Context, src *retention.Source) error {
	p.policies = src
	if src == nil {
		return nil
	}
	if err := src.Attach(ctx, p.store); err != nil {
		return err
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "offlinebox_retention_policy_loads_total",
			Help: "Retention policy files read and put in force (the first at start, then reloads)."},
			func() float64 { return float64(src.Reloads()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "offlinebox_retention_policy_refused_total",
			Help: "Retention policy files refused on reload (the previous policy stayed in force; the log names the line)."},
			func() float64 { return float64(src.Refused()) }),
		refusedByReason{src},
	} {
		if err := p.metrics.Register(c); err != nil {
			return fmt.Errorf("register retention policy metrics: %w", err)
		}
	}
	return nil
}

// refusedByReason is offlinebox_retention_reload_refused_total: the
// refused files by reason, read from the Source.
type refusedByReason struct{ src *retention.Source }

var refusedDesc = prometheus.NewDesc("offlinebox_retention_reload_refused_total",
	"Retention policy files refused (the policy in force stayed), by reason: empty (nothing in it, or a key holding nothing), "+
		"invalid, shrink (shortens a kept time or drops a hold without allow_shrink or retention apply), "+
		"ledger (the confirmed policy could not be read or written).", []string{"reason"}, nil)

func (r refusedByReason) Describe(ch chan<- *prometheus.Desc) { ch <- refusedDesc }

func (r refusedByReason) Collect(ch chan<- prometheus.Metric) {
	for _, reason := range []string{retention.ReasonEmpty, retention.ReasonInvalid, retention.ReasonShrink, retention.ReasonLedger} {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(r.src.RefusedFor(reason)), reason)
	}
}

// watchPolicies reloads the policy file on SIGHUP or when it changes.
func (p *processes) watchPolicies(ctx context.Context) error {
	if p.policies != nil {
		p.policies.Watch(ctx, policyPoll, slog.Default().With("component", "retention"))
	}
	return nil
}

func runRetention(ctx context.Context, args []string, stdout io.Writer) error {
	return runVerbs(ctx, "retention", []verb{
		{"explain", "which policy applies to a conversation and why: -conv ID, or -type T [-tag TAG]", runRetentionExplain},
		{"check", "show a policy file's change against the policy in force: [-against OLD] FILE; exit 1 when a reload would refuse it", runRetentionCheck},
		{"apply", "confirm a policy file in Redis (a shorter one only with -allow-shrink): [-allow-shrink] FILE", runRetentionApply},
	}, args, stdout)
}

// policyChange is a policy file read for check or apply, against the
// policy in force: the one confirmed in Redis, or -against's file.
type policyChange struct {
	next      *retention.Set
	data      []byte         // next's bytes
	base      *retention.Set // nil: none confirmed yet
	confirmed redisstore.ConfirmedRetention
	change    retention.Change
	store     *processes // open when the policy in force came from Redis
}

// readPolicyChange parses the file (FILE, or -retention-policy) and the
// policy in force, and compares them.
func readPolicyChange(ctx context.Context, name string, args []string, extra func(fs *flag.FlagSet)) (*policyChange, error) {
	var against string
	c, fs, err := parseStack(name, args, func(fs *flag.FlagSet) {
		fs.StringVar(&against, "against", "", "compare with this file instead of the policy confirmed in Redis")
		if extra != nil {
			extra(fs)
		}
	})
	if err != nil {
		return nil, err
	}
	file := c.RetentionPolicy
	if fs.NArg() > 0 {
		file = fs.Arg(0)
	}
	if file == "" {
		return nil, errors.New("give the policy FILE")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("retention policy: %w", err)
	}
	pc := &policyChange{data: data}
	if pc.next, err = retention.Parse(file, data); err != nil {
		return nil, err
	}
	if against != "" {
		old, err := os.ReadFile(against)
		if err != nil {
			return nil, fmt.Errorf("retention policy: %w", err)
		}
		if pc.base, err = retention.Parse(against, old); err != nil {
			return nil, fmt.Errorf("-against: %w", err)
		}
	} else {
		c.StoreWait = toolWait
		if err := c.validate(false); err != nil {
			return nil, err
		}
		if pc.store, err = open(ctx, c, needs{redis: true}); err != nil {
			return nil, &exitError{code: 2, err: fmt.Errorf("read the policy in force: %w", err)}
		}
		conf, ok, err := pc.store.store.ConfirmedRetention(ctx)
		if err != nil {
			pc.store.close()
			return nil, &exitError{code: 2, err: err}
		}
		if ok {
			pc.confirmed = conf
			if pc.base, err = retention.Parse(conf.Source, conf.Policy); err != nil {
				pc.store.close()
				return nil, &exitError{code: 2, err: fmt.Errorf("the confirmed policy: %w", err)}
			}
		}
	}
	if pc.base != nil {
		pc.change = retention.Compare(pc.base, pc.next)
	}
	return pc, nil
}

func (pc *policyChange) close() {
	if pc.store != nil {
		pc.store.close()
	}
}

// refused says why a reload of the file would be refused ("" when not).
func (pc *policyChange) refused(now time.Time) string {
	switch {
	case !pc.change.Shortens(), pc.next.ShrinkAllowed(now), pc.confirmed.Digest == pc.next.Digest:
		return ""
	}
	return fmt.Sprintf("shortens what the policy in force keeps: confirm with allow_shrink: %s in the file or `offlinebox retention apply -allow-shrink %s`",
		now.UTC().Format(time.DateOnly), pc.next.Source)
}

func (pc *policyChange) write(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d policies, valid\n", pc.next.Source, len(pc.next.Policies))
	switch {
	case pc.base == nil:
		fmt.Fprintln(w, "no policy confirmed yet: the first one put in force is confirmed as it is")
		return nil
	case pc.confirmed.Digest != "":
		fmt.Fprintf(w, "against the policy in force: %s, confirmed (%s) %s\n", pc.confirmed.Source, pc.confirmed.How,
			pc.confirmed.At.UTC().Format(time.RFC3339))
	default:
		fmt.Fprintf(w, "against %s\n", pc.base.Source)
	}
	return pc.change.Write(w)
}

// runRetentionCheck validates a policy file and shows what putting it in
// force would change; it exits 1 naming the line for a bad file, and 1
// when a reload of it would be refused.
func runRetentionCheck(ctx context.Context, args []string, stdout io.Writer) error {
	pc, err := readPolicyChange(ctx, "retention check", args, nil)
	if err != nil {
		return err
	}
	defer pc.close()
	if err := pc.write(stdout); err != nil {
		return err
	}
	if why := pc.refused(time.Now()); why != "" {
		return fmt.Errorf("a reload of %s would be refused: it %s", pc.next.Source, why)
	}
	fmt.Fprintln(stdout, "a reload would put it in force")
	return nil
}

// runRetentionApply confirms a policy file in Redis: running processes
// then put that very file in force at their next reload even where it
// shortens what is kept (with -allow-shrink), and every expiry sweep keeps
// no more than it says.
func runRetentionApply(ctx context.Context, args []string, stdout io.Writer) error {
	var allow bool
	pc, err := readPolicyChange(ctx, "retention apply", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&allow, "allow-shrink", false, "confirm a file that shortens kept times or drops holds")
	})
	if err != nil {
		return err
	}
	defer pc.close()
	if pc.store == nil {
		return errors.New("retention apply confirms in Redis: -against does not apply")
	}
	if err := pc.write(stdout); err != nil {
		return err
	}
	now := time.Now()
	how := "apply"
	if why := pc.refused(now); why != "" {
		if !allow {
			return fmt.Errorf("not applied: %s %s (give -allow-shrink to confirm)", pc.next.Source, why)
		}
		how = "apply -allow-shrink"
	}
	if err := pc.store.store.ConfirmRetention(ctx, redisstore.ConfirmedRetention{Policy: pc.data, Digest: pc.next.Digest,
		Source: pc.next.Source, How: how, At: now}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "confirmed (%s): running processes put this file in force at their next reload (SIGHUP, or when it changes)\n", how)
	return nil
}

// runRetentionExplain prints which policy applies to a conversation and
// why. The conversation's type and tag come from Redis, else from
// ClickHouse (after Redis expired it), or from -type and -tag.
func runRetentionExplain(ctx context.Context, args []string, stdout io.Writer) error {
	var conv, tag, typ string
	c, fs, err := parseStackUsage("retention explain", "-conv ID | -type direct|group [-tag TAG] [flags]", args, func(fs *flag.FlagSet) {
		fs.StringVar(&conv, "conv", "", "the conversation to explain (with -type: only its name in the answer)")
		fs.StringVar(&typ, "type", "", "direct or group: explain without asking the stores")
		fs.StringVar(&tag, "tag", "", "with -type: the conversation's tag")
	})
	if err != nil {
		return err
	}
	if conv != "" || typ == "" {
		if err := schemas.ValidID("-conv", conv); err != nil {
			return err
		}
	}
	set := retention.FromRetention(redisstore.Retention{}, 0)
	if c.RetentionPolicy != "" {
		src, err := retention.Load(c.RetentionPolicy)
		if err != nil {
			return err
		}
		set = src.Current()
	}
	var info retention.Conversation
	if typ != "" {
		t, ok := schemas.ParseConvType(typ)
		if !ok || t == schemas.ConvType_CONV_TYPE_UNSPECIFIED {
			return fmt.Errorf("-type %q is not direct or group", typ)
		}
		if conv == "" {
			conv = "(not named)" // no policy names it: only its type and tag decide
		}
		info = retention.Conversation{ID: conv, Type: t, Tag: tag, Found: "flags"}
	} else {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "tag" })
		if given {
			return errors.New("-tag needs -type (otherwise the tag is read from the stores)")
		}
		c.StoreWait = toolWait
		if err := c.validate(false); err != nil {
			return err
		}
		if info, err = lookupConversation(ctx, c, conv); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	return set.Explain(stdout, info)
}

// lookupConversation reads a conversation's type and tag from Redis, else
// from ClickHouse.
func lookupConversation(ctx context.Context, c *stackConfig, conv string) (retention.Conversation, error) {
	out := retention.Conversation{ID: conv}
	p, err := open(ctx, c, needs{redis: true})
	if err != nil {
		return out, err
	}
	defer p.close()
	meta, ok, err := p.store.ConvRetentionInfo(ctx, conv)
	if err != nil {
		return out, err
	}
	if ok {
		out.Type, out.Tag, out.Found = meta.Type, meta.Tag, "redis"
		return out, nil
	}
	ch, err := openClickHouse(ctx, c)
	if err != nil {
		return out, fmt.Errorf("%s is not in Redis; asking ClickHouse: %w", conv, err)
	}
	defer ch.Close()
	t, ok, err := ch.ConvType(ctx, conv)
	if err != nil {
		return out, err
	}
	if !ok {
		return out, fmt.Errorf("conversation %s is neither in Redis nor in ClickHouse (explain it with -type and -tag)", conv)
	}
	tags, err := ch.ConvTags(ctx, []string{conv})
	if err != nil {
		return out, err
	}
	out.Type, out.Tag, out.Found = t, tags[conv], "clickhouse"
	return out, nil
}
