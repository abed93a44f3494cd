package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/offlinebox/offlinebox/schemas"
)

// The operations on users' keys. Each routes every user to the store
// holding their keys; a store refuses a user moved to the hot store since
// the router last looked (ErrUserMoved, nothing of theirs read or
// written), and routeEach then reloads the hot set and runs the refused
// part once more. Every operation is idempotent, so running a part again
// is safe.

// AckDevice raises one device's cursors (see Store.AckDevice).
func (r *InboxRouter) AckDevice(ctx context.Context, user, device string, items []AckItem, nowMS int64) (AckResult, error) {
	return OnUser(ctx, r, user, func(users *Store) (AckResult, error) {
		return users.AckDevice(ctx, user, device, items, nowMS)
	})
}

// AckAndRaise raises one device's cursors and then the members' delivered
// receipts of marks: in one round trip when every user's keys are on the
// main store (Store.AckAndRaise), else the ack on the user's store first.
func (r *InboxRouter) AckAndRaise(ctx context.Context, user, device string, items []AckItem, nowMS int64, marks []ReceiptMark) (AckResult, []RaisedReceipt, error) {
	if r.hot == nil {
		return r.main.AckAndRaise(ctx, user, device, items, nowMS, marks)
	}
	res, err := r.AckDevice(ctx, user, device, items, nowMS)
	if err != nil {
		return AckResult{}, nil, err
	}
	raised, err := r.main.RaiseReceipts(ctx, ReceiptDelivered, marks)
	return res, raised, err
}

// DeviceCursors reads one device's acked cursors.
func (r *InboxRouter) DeviceCursors(ctx context.Context, user, device string) (map[string]Position, error) {
	return OnUser(ctx, r, user, func(users *Store) (map[string]Position, error) {
		return users.DeviceCursors(ctx, user, device)
	})
}

// WasEvicted reports whether device was evicted from user's devices.
func (r *InboxRouter) WasEvicted(ctx context.Context, user, device string) (bool, error) {
	return OnUser(ctx, r, user, func(users *Store) (bool, error) { return users.WasEvicted(ctx, user, device) })
}

// ApplyInboxes applies updates (see Store.ApplyInboxes), one pipeline per
// store. An update whose user turns out moved is routed again and applied
// once more, a move that stopped half-way (a user marked moved but not
// listed as hot) finished first. Outcomes and errors are per update; an
// update refused twice has an error that is ErrUserMoved.
func (r *InboxRouter) ApplyInboxes(ctx context.Context, updates []InboxUpdate) ([]InboxOutcome, []error) {
	return routeItems(ctx, r, updates, func(u InboxUpdate) string { return u.User }, true, (*Store).ApplyInboxes)
}

// routeItems runs call on each store with the items of its users, one
// call per store, and routes again the items a store refused as moved
// (resume: a move that stopped half-way finished first). Results and
// errors are per item; an item refused twice keeps its second refusal.
func routeItems[T, R any](ctx context.Context, r *InboxRouter, items []T, userOf func(T) string, resume bool,
	call func(st *Store, ctx context.Context, items []T) ([]R, []error)) ([]R, []error) {
	res := make([]R, len(items))
	errs := make([]error, len(items))
	users := make([]string, len(items))
	for i, it := range items {
		users[i] = userOf(it)
	}
	left, err := r.routeEach(ctx, users, resume, func(st *Store, idx []int) ([]int, error) {
		out, e := call(st, ctx, pick(items, idx))
		var moved []int
		for j, i := range idx {
			res[i], errs[i] = out[j], e[j]
			if errors.Is(e[j], ErrUserMoved) {
				moved = append(moved, i)
			}
		}
		return moved, nil
	})
	for _, i := range left {
		switch {
		case err == nil: // refused twice: errs[i] is the second refusal
		case errs[i] == nil: // not reached
			errs[i] = err
		default: // refused, then routing again failed
			errs[i] = errors.Join(errs[i], err)
		}
	}
	return res, errs
}

// ApplyReads applies read receipts (see Store.ApplyReads), one pipeline
// per store, and returns how many conversations' read seq rose. Marks
// that can never be applied come back as ItemErrors (indexes of marks).
func (r *InboxRouter) ApplyReads(ctx context.Context, marks []ReadMark) (int, error) {
	users := make([]string, len(marks))
	for i, m := range marks {
		users[i] = m.User
	}
	raised := 0
	failed := ItemErrors{}
	left, err := r.routeEach(ctx, users, false, func(st *Store, idx []int) ([]int, error) {
		n, err := st.ApplyReads(ctx, pick(marks, idx))
		if errors.Is(err, ErrUserMoved) {
			return idx, nil
		}
		raised += n
		return nil, failed.absorb(idx, err)
	})
	if err == nil && len(left) > 0 {
		err = fmt.Errorf("apply read receipts: %w", ErrUserMoved)
	}
	if err == nil && len(failed) > 0 {
		err = failed
	}
	return raised, err
}

// ApplyPreviews stores each record's preview for the members of its
// conversation (see Store.ApplyPreviews), one pipeline per store. Records
// whose preview can never be read or written for some member come back as
// ItemErrors (indexes of latest); the others were applied.
func (r *InboxRouter) ApplyPreviews(ctx context.Context, latest []*schemas.Sequenced) error {
	ws, failed, err := r.main.previewWrites(ctx, latest)
	if err != nil {
		return err
	}
	users := make([]string, len(ws))
	for i, w := range ws {
		users[i] = w.user
	}
	left, err := r.routeEach(ctx, users, false, func(st *Store, idx []int) ([]int, error) {
		share := pick(ws, idx)
		moved, werr, err := st.writePreviews(ctx, share)
		for i, e := range werr {
			failed.add(share[i].rec, e)
		}
		return pick(idx, moved), err
	})
	if err == nil && len(left) > 0 {
		err = fmt.Errorf("write previews: %w", ErrUserMoved)
	}
	if err == nil && len(failed) > 0 {
		err = failed
	}
	return err
}

// OnUser runs op on the store holding user's keys (routeEach with one
// item): an op answering ErrUserMoved runs once more after the hot set is
// reloaded. The stages built on the store (redisstore/readpath's sync and
// list) route their users through it.
func OnUser[T any](ctx context.Context, r *InboxRouter, user string, op func(users *Store) (T, error)) (T, error) {
	var out T
	var opErr error
	_, err := r.routeEach(ctx, []string{user}, false, func(st *Store, idx []int) ([]int, error) {
		out, opErr = op(st)
		if errors.Is(opErr, ErrUserMoved) {
			return idx, nil
		}
		return nil, opErr
	})
	if err == nil {
		err = opErr
	}
	return out, err
}

// routeEach applies items, each on the store holding the keys of users[i]:
// apply gets one store's share (indexes of items) and returns those it
// found refused because their user moved. After a forced reload of the
// hot set they are applied once more; with resume, the moves of those
// still routed to the main store are finished first (a move that stopped
// half-way marks the user moved before it lists them as hot). It returns
// the indexes refused twice or, when err stopped it, those refused or not
// reached by then.
func (r *InboxRouter) routeEach(ctx context.Context, users []string, resume bool,
	apply func(st *Store, idx []int) (moved []int, err error)) ([]int, error) {
	all := make([]int, len(users))
	for i := range all {
		all[i] = i
	}
	if err := r.Refresh(ctx, false); err != nil {
		return all, fmt.Errorf("route %s: %w", usersOf(users, all), err)
	}
	moved, err := r.applyShares(users, all, apply)
	if err != nil || len(moved) == 0 {
		return moved, err
	}
	if err := r.Refresh(ctx, true); err != nil {
		return moved, fmt.Errorf("route %s: %w", usersOf(users, moved), err)
	}
	if resume {
		if err := r.resumeMoves(ctx, users, moved); err != nil {
			return moved, err
		}
	}
	return r.applyShares(users, moved, apply)
}

// applyShares splits idx by the store each user is routed to and applies
// each share: the main store's first, one call per store.
func (r *InboxRouter) applyShares(users []string, idx []int, apply func(st *Store, idx []int) ([]int, error)) ([]int, error) {
	var onMain, onHot []int
	for _, i := range idx {
		if r.storeOf(users[i]) == r.main {
			onMain = append(onMain, i)
		} else {
			onHot = append(onHot, i)
		}
	}
	var moved []int
	for _, share := range []struct {
		st  *Store
		idx []int
	}{{r.main, onMain}, {r.hot, onHot}} {
		if len(share.idx) == 0 {
			continue
		}
		m, err := apply(share.st, share.idx)
		moved = append(moved, m...)
		if err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// resumeMoves finishes the moves of the users of idx that the main store
// refuses but the hot set does not list.
func (r *InboxRouter) resumeMoves(ctx context.Context, users []string, idx []int) error {
	for _, i := range idx {
		if r.storeOf(users[i]) != r.main {
			continue
		}
		if r.hot == nil {
			return fmt.Errorf("user %s: marked moved, but no hot store is configured", users[i])
		}
		if err := r.MoveToHot(ctx, users[i]); err != nil {
			return err
		}
	}
	return nil
}

// usersOf names the users of idx in an error: one by name, more by count.
func usersOf(users []string, idx []int) string {
	if len(idx) == 1 {
		return users[idx[0]]
	}
	return fmt.Sprintf("%d users", len(idx))
}

// pick is the items at idx, in the order of idx.
func pick[T any](items []T, idx []int) []T {
	out := make([]T, len(idx))
	for j, i := range idx {
		out[j] = items[i]
	}
	return out
}
