package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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

// usePolicies makes src the process's policy (nil: built-in) and
// registers its metrics.
func (p *processes) usePolicies(src *retention.Source) error {
	p.policies = src
	if src == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "offlinebox_retention_policy_loads_total",
			Help: "Retention policy files read and put in force (the first at start, then reloads)."},
			func() float64 { return float64(src.Reloads()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "offlinebox_retention_policy_refused_total",
			Help: "Retention policy files refused on reload (the previous policy stayed in force; the log names the line)."},
			func() float64 { return float64(src.Refused()) }),
	} {
		if err := p.metrics.Register(c); err != nil {
			return fmt.Errorf("register retention policy metrics: %w", err)
		}
	}
	return nil
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
		{"check", "validate a policy file: -retention-policy FILE", func(_ context.Context, args []string, stdout io.Writer) error {
			return runRetentionCheck(args, stdout)
		}},
	}, args, stdout)
}

// runRetentionCheck validates a policy file and exits 1 naming the line.
func runRetentionCheck(args []string, stdout io.Writer) error {
	c, _, err := parseStack("retention check", args, nil)
	if err != nil {
		return err
	}
	if c.RetentionPolicy == "" {
		return errors.New("give -retention-policy FILE")
	}
	src, err := retention.Load(c.RetentionPolicy)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d policies, valid\n", src.Path(), len(src.Current().Policies))
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
