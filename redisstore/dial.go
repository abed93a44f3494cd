package redisstore

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr is a Redis address read by the one rule every process and tool
// follows (ParseAddr).
type Addr struct {
	url        *redis.Options
	clusterURL *redis.ClusterOptions
	seeds      []string
	cluster    bool
}

// ParseAddr reads a Redis address:
//
//   - a redis:// or rediss:// URL: one server, with the URL's user,
//     password, database and options (dial_timeout=…, pool_size=…);
//   - host:port: one server;
//   - several comma-separated host:port: the seeds of a Redis Cluster.
//
// cluster makes a single address a Cluster seed too (a URL then names
// further seeds as addr= parameters, and no database). No error carries
// the password.
func ParseAddr(addr string, cluster bool) (Addr, error) {
	addr = strings.TrimSpace(addr)
	if strings.HasPrefix(addr, "redis://") || strings.HasPrefix(addr, "rediss://") {
		var a Addr
		var err error
		if cluster {
			a.clusterURL, err = redis.ParseClusterURL(addr)
		} else {
			a.url, err = redis.ParseURL(addr)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL, password and all
		}
		if err != nil {
			return Addr{}, fmt.Errorf("redis URL: %w", err)
		}
		return a, nil
	}
	var seeds []string
	for _, s := range strings.Split(addr, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return Addr{}, errors.New("redis address: no host:port given")
	}
	for _, s := range seeds {
		host, port, err := net.SplitHostPort(s)
		if _, perr := strconv.ParseUint(port, 10, 16); err != nil || host == "" || perr != nil {
			return Addr{}, fmt.Errorf("redis address %q: not host:port (nor a redis:// URL)", s)
		}
	}
	return Addr{seeds: seeds, cluster: cluster || len(seeds) > 1}, nil
}

// Cluster reports whether the address is of a Redis Cluster.
func (a Addr) Cluster() bool { return a.clusterURL != nil || a.cluster }

// DialOptions are a process's client settings; each applies where the
// address (a URL's parameters) leaves it unset. Zero: go-redis's default.
type DialOptions struct {
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	PoolSize                               int
}

// fill sets what the address left unset.
func (o DialOptions) fill(dial, read, write *time.Duration, pool *int) {
	for _, d := range []struct{ to, from *time.Duration }{{dial, &o.DialTimeout}, {read, &o.ReadTimeout}, {write, &o.WriteTimeout}} {
		if *d.to == 0 {
			*d.to = *d.from
		}
	}
	if *pool == 0 {
		*pool = o.PoolSize
	}
}

// Dial returns a client of the address; it connects on first use.
//
// Every call is bounded by its context's deadline (the store's
// CallTimeout) on the socket too: go-redis otherwise waits on a server
// that stopped answering for its own ReadTimeout, whatever the caller's
// deadline. ReadTimeout and WriteTimeout stay the bound of a call whose
// context has no deadline, and the ceiling of one whose deadline is
// further away.
func (a Addr) Dial(o DialOptions) redis.UniversalClient {
	switch {
	case a.url != nil:
		opt := *a.url
		o.fill(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolSize)
		opt.ContextTimeoutEnabled = true
		return redis.NewClient(&opt)
	case a.clusterURL != nil:
		opt := *a.clusterURL
		o.fill(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolSize)
		opt.ContextTimeoutEnabled = true
		return redis.NewClusterClient(&opt)
	}
	opt := redis.UniversalOptions{Addrs: a.seeds, IsClusterMode: a.cluster, ContextTimeoutEnabled: true}
	o.fill(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolSize)
	return redis.NewUniversalClient(&opt)
}
