package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrMoveBusy: another process is moving this user right now.
var ErrMoveBusy = errors.New("user is being moved by another process")

// DefaultInboxRouterRefresh is how long a router trusts its copy of the hot set.
const DefaultInboxRouterRefresh = 10 * time.Second

// inboxMoveLease bounds how long a crashed mover blocks others.
const inboxMoveLease = time.Minute

// InboxRouter finds the store that holds a user's keys: the main store, or
// the hot store for users isolated there because their inbox write rate is
// far above normal. Every reader and writer of user keys goes through the
// operations of one (inbox_router_ops.go), so all processes agree once
// their copies of the hot set refresh. It is safe for concurrent use.
type InboxRouter struct {
	main, hot *Store
	refresh   time.Duration

	mu      sync.RWMutex
	users   map[string]bool
	fetched time.Time
}

// NewInboxRouter routes between main and hot (nil: no hot store, every user
// is on main). refresh <= 0 means DefaultInboxRouterRefresh.
func NewInboxRouter(main, hot *Store, refresh time.Duration) *InboxRouter {
	if refresh <= 0 {
		refresh = DefaultInboxRouterRefresh
	}
	return &InboxRouter{main: main, hot: hot, refresh: refresh, users: map[string]bool{}}
}

// HasHot reports whether a hot store is configured.
func (r *InboxRouter) HasHot() bool { return r.hot != nil }

// Hot returns the hot store, nil without one.
func (r *InboxRouter) Hot() *Store { return r.hot }

// Main returns the main store (conversation keys always live there).
func (r *InboxRouter) Main() *Store { return r.main }

// OnHot reports whether the router's copy of the hot set routes user to
// the hot store.
func (r *InboxRouter) OnHot(user string) bool { return r.storeOf(user) != r.main }

// storeOf returns the store holding user's keys, by the router's copy of
// the hot set.
func (r *InboxRouter) storeOf(user string) *Store {
	if r.hot == nil {
		return r.main
	}
	r.mu.RLock()
	hot := r.users[user]
	r.mu.RUnlock()
	if hot {
		return r.hot
	}
	return r.main
}

// Refresh reloads the hot set when the copy is older than the refresh
// interval, or always when force is set.
func (r *InboxRouter) Refresh(ctx context.Context, force bool) error {
	if r.hot == nil {
		return nil
	}
	r.mu.RLock()
	fresh := time.Since(r.fetched) < r.refresh
	r.mu.RUnlock()
	if fresh && !force {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.main.cfg.CallTimeout)
	defer cancel()
	list, err := r.main.rdb.SMembers(ctx, r.main.keys.HotUsers()).Result()
	if err != nil {
		return fmt.Errorf("load hot users: %w", sharedStateError{err})
	}
	users := make(map[string]bool, len(list))
	for _, u := range list {
		users[u] = true
	}
	r.mu.Lock()
	r.users, r.fetched = users, time.Now()
	r.mu.Unlock()
	return nil
}

// MoveToHot moves every key of user from the main to the hot store and
// lists the user in the hot set. Writers on the main store refuse the
// user from the first step on (the profile's `loc` = `hot`, see
// schemas/redis-keys.md), and nothing is written on the hot store before
// the last step, so a move that crashed half-way is resumed by calling
// MoveToHot again.
func (r *InboxRouter) MoveToHot(ctx context.Context, user string) error {
	if r.hot == nil {
		return fmt.Errorf("move %s to the hot store: no hot store configured", user)
	}
	ctx, cancel := context.WithTimeout(ctx, 4*r.main.cfg.CallTimeout)
	defer cancel()
	m, k := r.main.rdb, r.main.keys
	listed, err := m.SIsMember(ctx, k.HotUsers(), user).Result()
	if err != nil {
		return fmt.Errorf("move %s: %w", user, err)
	}
	if listed {
		r.mu.Lock()
		r.users[user] = true
		r.mu.Unlock()
		return nil
	}
	token := strconv.FormatInt(time.Now().UnixNano(), 36)
	ok, err := m.SetNX(ctx, k.InboxMoveLock(user), token, inboxMoveLease).Result()
	if err != nil {
		return fmt.Errorf("move %s: lock: %w", user, err)
	}
	if !ok {
		return fmt.Errorf("move %s: %w", user, ErrMoveBusy)
	}
	if err := r.moveKeys(ctx, user); err != nil {
		return fmt.Errorf("move %s: %w", user, err)
	}
	r.mu.Lock()
	r.users[user] = true
	r.mu.Unlock()
	m.Del(ctx, k.InboxMoveLock(user))
	return nil
}

func (r *InboxRouter) moveKeys(ctx context.Context, user string) error {
	m, h := r.main.rdb, r.hot.rdb
	if err := m.HSet(ctx, r.main.keys.Profile(user), ProfileLocation, ProfileOnHot).Err(); err != nil {
		return fmt.Errorf("mark moved: %w", err)
	}
	from, err := inboxMoveKeys(ctx, m, r.main.keys, user)
	if err != nil {
		return err
	}
	to := make([]string, len(from))
	for i := range from {
		to[i] = r.hot.keys.Prefix + from[i][len(r.main.keys.Prefix):]
	}
	var moved []string
	for i, key := range from {
		dump, err := m.Dump(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return fmt.Errorf("dump %s: %w", key, err)
		}
		ttl, err := m.PTTL(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("ttl %s: %w", key, err)
		}
		if err := h.RestoreReplace(ctx, to[i], max(ttl, 0), dump).Err(); err != nil {
			return fmt.Errorf("restore %s: %w", to[i], err)
		}
		moved = append(moved, key)
	}
	if err := h.HDel(ctx, r.hot.keys.Profile(user), ProfileLocation).Err(); err != nil {
		return fmt.Errorf("unmark on hot: %w", err)
	}
	if err := m.SAdd(ctx, r.main.keys.HotUsers(), user).Err(); err != nil {
		return fmt.Errorf("list as hot: %w", err)
	}
	for _, key := range moved {
		if key == r.main.keys.Profile(user) {
			continue // stays on main as the marker that sends writers away
		}
		if err := m.Del(ctx, key).Err(); err != nil {
			return fmt.Errorf("drop %s from main: %w", key, err)
		}
	}
	return nil
}

// inboxMoveKeys lists every key of the user, device cursors included.
func inboxMoveKeys(ctx context.Context, rdb redis.UniversalClient, k Keys, user string) ([]string, error) {
	keys := []string{k.Inbox(user), k.ConvList(user), k.Mentions(user), k.Previews(user),
		k.Devices(user), k.Evicted(user), k.Profile(user),
		k.MentionIndex(user)}
	devs, err := rdb.ZRange(ctx, k.Devices(user), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	gone, err := rdb.SMembers(ctx, k.Evicted(user)).Result()
	if err != nil {
		return nil, fmt.Errorf("list evicted devices: %w", err)
	}
	for _, d := range append(devs, gone...) {
		keys = append(keys, k.Cursor(user, d))
	}
	return keys, nil
}
