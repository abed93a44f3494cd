// Package readpath is the store's read path: what a device reads to catch
// up. Sync (sync.go) answers a device's catch-up request within its byte
// budget: the mention lane first, then conversations by priority, each
// sliced on its own (sync_plan.go, sync_fill.go, sync_extend.go). ReadPage
// reads one page of a timeline inside the window, and ListConversations
// one page of the conversation list. Every read of a timeline is one
// script (lua/sync_range.lua) that answers the slice with its counters in
// one snapshot; the list's page is lua/conversations_page.lua.
//
// The package owns the read caches, kept in its Reader: small groups'
// member and notice copies (sync_members.go, sync_notices.go), which sync
// and the list both answer from while the conversation's (epoch, mver)
// is the copy's, and the slice reads a reconnect storm shares
// (sync_collapse.go). They are copies only: a stale one is read again,
// never answered.
//
// It writes nothing itself but a syncing device's last-use time (the list
// has the core build a user's list indexes that predate them), and owns
// no key layout of its own: it works over redisstore's exported core (the
// store's client, keys and configuration, the router's OnUser, the reply
// readers, EvalPiped and the bounded map), as redisstore/rebuild does.
package readpath
