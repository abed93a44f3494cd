package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/presence_set.lua
	presenceSetLua    string
	presenceSetScript = redis.NewScript(presenceSetLua)
	//go:embed lua/presence_clear.lua
	presenceClearLua    string
	presenceClearScript = redis.NewScript(presenceClearLua)
	//go:embed lua/presence_refresh.lua
	presenceRefreshLua    string
	presenceRefreshScript = redis.NewScript(presenceRefreshLua)
)

// Presence is where one device's live connection is, or when it left.
type Presence struct {
	Device string
	// Node holds the connection; empty once it closed.
	Node string
	Conn string
	// Until is the lease's end while connected, the time it closed after.
	Until time.Time
}

// Online reports whether the entry is a connection whose lease runs at now.
func (p Presence) Online(now time.Time) bool { return p.Node != "" && !now.After(p.Until) }

func parsePresence(device, v string) (Presence, bool) {
	parts := strings.SplitN(v, "|", 3)
	if len(parts) != 3 {
		return Presence{}, false
	}
	ms, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return Presence{}, false
	}
	p := Presence{Device: device, Conn: parts[1], Until: time.UnixMilli(ms)}
	if parts[0] != "-" {
		p.Node = parts[0]
	}
	return p, true
}

// PresenceLease is how a connection is registered.
type PresenceLease struct {
	Node, Conn string
	// TTL is the lease: the holder refreshes it before it runs out.
	TTL time.Duration
	// Keep is how long a closed entry is remembered (the offline threshold).
	Keep time.Duration
	// MaxDevices bounds the user's devices connected at once, on every
	// node (0: no bound): a device past it is refused (ErrTooManyDevices).
	MaxDevices int
}

// ErrTooManyDevices: the user has as many devices connected as the lease
// allows; the registration changed nothing.
var ErrTooManyDevices = errors.New("too many devices of the user are connected")

// SetPresence registers device's connection and returns what the entry
// held before (ok false when nothing): the connection it replaces, or when
// the device left. A device not connected now is refused with
// ErrTooManyDevices when l.MaxDevices others of the user are: the check
// and the registration are one script, so connections on many nodes at
// once get exactly the bound.
func (s *Store) SetPresence(ctx context.Context, user, device string, l PresenceLease, now time.Time) (Presence, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	v, err := presenceSetScript.Run(ctx, s.rdb, []string{s.keys.Presence(user)},
		device, l.Node, l.Conn, now.UnixMilli(), l.TTL.Milliseconds(), l.Keep.Milliseconds(), l.MaxDevices).Text()
	if err == redis.Nil {
		return Presence{}, false, nil
	}
	if redis.HasErrorPrefix(err, refusalLiveDevices) {
		return Presence{}, false, fmt.Errorf("register presence of %s/%s: %w (%v)", user, device, ErrTooManyDevices, err)
	}
	if err != nil {
		return Presence{}, false, fmt.Errorf("register presence of %s/%s: %w", user, device, err)
	}
	p, ok := parsePresence(device, v)
	return p, ok, nil
}

// ClearPresence marks the connection closed, unless a newer one of the
// device already replaced it.
func (s *Store) ClearPresence(ctx context.Context, user, device, conn string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	err := presenceClearScript.Run(ctx, s.rdb, []string{s.keys.Presence(user)}, device, conn, now.UnixMilli()).Err()
	if err != nil && err != redis.Nil {
		return fmt.Errorf("clear presence of %s/%s: %w", user, device, err)
	}
	return nil
}

// LeaseRef names one connection whose lease a node extends.
type LeaseRef struct{ User, Device, Conn string }

// RefreshPresence extends the leases of a node's connections to now+ttl:
// one script per user, all in one pipeline. It returns the connections
// of refs whose device's entry names another connection: a newer one of
// the same device took it. A user whose call failed fails alone: the
// connections every other user's reply named are returned all the same,
// with the error. When each failure can never pass (a key of the wrong
// type, a malformed reply) the error is ItemErrors, naming every ref of
// those users by its index in refs; otherwise it is the first failure
// to wait for.
func (s *Store) RefreshPresence(ctx context.Context, node string, refs []LeaseRef, ttl time.Duration, now time.Time) ([]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	byUser := map[string][]any{}
	refsOf := map[string][]int{} // user → indexes of their refs
	var users []string
	for i, r := range refs {
		if _, ok := byUser[r.User]; !ok {
			users = append(users, r.User)
		}
		byUser[r.User] = append(byUser[r.User], r.Device, r.Conn)
		refsOf[r.User] = append(refsOf[r.User], i)
	}
	exp := now.Add(ttl).UnixMilli()
	calls := make([]scriptCall, len(users))
	for i, u := range users {
		args := append([]any{node, exp, (2 * ttl).Milliseconds()}, byUser[u]...)
		calls[i] = scriptCall{keys: []string{s.keys.Presence(u)}, args: args}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds, err := s.evalPiped(ctx, presenceRefreshScript, calls)
	if cmds == nil && err != nil {
		return nil, fmt.Errorf("refresh presence of %d users on %s: %w", len(users), node, err)
	}
	var replaced []string
	err = itemFailures(len(cmds), func(i int) error {
		ids, err := replacedConns(cmds[i])
		replaced = append(replaced, ids...)
		return err
	}, func(i int) []int { return refsOf[users[i]] },
		func(i int) string { return fmt.Sprintf("refresh presence of %s on %s", users[i], node) })
	return replaced, err
}

// replacedConns reads one user's presence_refresh.lua reply.
func replacedConns(cmd *redis.Cmd) ([]string, error) {
	if err := cmd.Err(); err != nil {
		return nil, err
	}
	ids, err := cmd.StringSlice()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedReply, err)
	}
	return ids, nil
}

// PresenceOf reads the presence entries of users (one pipelined HGETALL
// each), devices sorted. A user whose entry can never be read (a key of
// the wrong type) has none, and the error is then ItemErrors naming them
// by their index in users, beside the others' entries.
func (s *Store) PresenceOf(ctx context.Context, users []string) (map[string][]Presence, error) {
	if len(users) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds := make([]*redis.MapStringStringCmd, len(users))
	// a failed pipeline sets every command's error: they are read below
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, u := range users {
			cmds[i] = p.HGetAll(ctx, s.keys.Presence(u))
		}
		return nil
	})
	err := itemFailures(len(cmds), func(i int) error { return cmds[i].Err() }, nil,
		func(i int) string { return "read presence of " + users[i] })
	var failed ItemErrors
	if err != nil && !errors.As(err, &failed) {
		return nil, err
	}
	out := make(map[string][]Presence, len(users))
	for i, u := range users {
		h := cmds[i].Val()
		if len(h) == 0 || failed[i] != nil {
			continue
		}
		list := make([]Presence, 0, len(h))
		for dev, v := range h {
			if p, ok := parsePresence(dev, v); ok {
				list = append(list, p)
			}
		}
		sort.Slice(list, func(a, b int) bool { return list[a].Device < list[b].Device })
		out[u] = list
	}
	return out, err
}

// DeviceCursors reads one device's acked cursors (s holds user's keys).
func (s *Store) DeviceCursors(ctx context.Context, user, device string) (map[string]Position, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	h, err := s.rdb.HGetAll(ctx, s.keys.Cursor(user, device)).Result()
	if err != nil {
		return nil, fmt.Errorf("read cursors of %s/%s: %w", user, device, err)
	}
	return ParseCursors(h), nil
}

// WasEvicted reports whether device was evicted from user's devices (its
// cursors are gone; it must sync in full). s holds user's keys.
func (s *Store) WasEvicted(ctx context.Context, user, device string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	ok, err := s.rdb.SIsMember(ctx, s.keys.Evicted(user), device).Result()
	if err != nil {
		return false, fmt.Errorf("read eviction of %s/%s: %w", user, device, err)
	}
	return ok, nil
}
