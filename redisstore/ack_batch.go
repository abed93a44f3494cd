package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/ack_cursor_raise.lua
	ackCursorRaiseLua    string
	ackCursorRaiseScript = redis.NewScript(ackCursorRaiseLua)
)

// DeviceTouchInterval is how stale a registered device's last use may get
// before an ack writes it again (lua/ack_cursor_raise.lua): the order in
// which devices are evicted is the order of their last use to within it,
// and most acks of a connected device write only its cursor.
const DeviceTouchInterval = 30 * time.Second

// AckRegisteredDevices records several devices' acks in one pipeline (a
// Cluster client sends one per node). An ack marked Registered (its
// connection already ran ack_cursor.lua for the device) only raises the
// cursor (lua/ack_cursor_raise.lua); the others, and a registered device
// found evicted since, take the full step of AckDevices, which registers
// the device afresh and reports WasEvicted. s holds every one of the
// users' keys; results and errors are per ack (ErrUserMoved: route again).
func (s *Store) AckRegisteredDevices(ctx context.Context, acks []DeviceAck) ([]AckResult, []error) {
	res := make([]AckResult, len(acks))
	errs := make([]error, len(acks))
	var lean []int
	var full []DeviceAck
	var fullAt []int
	for i, a := range acks {
		if a.Registered {
			lean = append(lean, i)
		} else {
			full, fullAt = append(full, a), append(fullAt, i)
		}
	}
	if len(lean) > 0 {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		calls := make([]scriptCall, len(lean))
		for j, i := range lean {
			calls[j] = s.ackRaiseCall(acks[i])
		}
		cmds, err := s.evalPiped(cctx, ackCursorRaiseScript, calls)
		cancel()
		for j, i := range lean {
			a := acks[i]
			cerr := err
			if j < len(cmds) && cmds[j] != nil {
				cerr = cmds[j].Err()
			}
			switch {
			case cerr != nil:
				errs[i] = fmt.Errorf("raise %d cursors of %s/%s: %w", len(a.Items), a.User, a.Device, AsUserMoved(cerr))
			case readReplyUint(cmds[j].Val()) == ackRaiseStatusUnregistered:
				full, fullAt = append(full, a), append(fullAt, i)
			}
		}
	}
	if len(full) > 0 {
		r, e := s.AckDevices(ctx, full)
		for j, i := range fullAt {
			res[i], errs[i] = r[j], e[j]
		}
	}
	return res, errs
}

// ackRaiseCall is the keys and arguments of lua/ack_cursor_raise.lua.
func (s *Store) ackRaiseCall(a DeviceAck) scriptCall {
	args := make([]any, 0, 3+3*len(a.Items))
	args = append(args, a.Device, a.NowMS, DeviceTouchInterval.Milliseconds())
	for _, it := range a.Items {
		args = append(args, it.Conv, it.Seq, it.Epoch)
	}
	keys := []string{s.keys.Devices(a.User), s.keys.Cursor(a.User, a.Device), s.keys.Profile(a.User)}
	return scriptCall{keys: keys, args: args}
}

// AckRegisteredDevices records devices' acks (see
// Store.AckRegisteredDevices), one pipeline per store. An ack whose user
// turns out moved is routed again and applied once more (each step only
// raises, so applying it again changes nothing). Results and errors are
// per ack.
func (r *InboxRouter) AckRegisteredDevices(ctx context.Context, acks []DeviceAck) ([]AckResult, []error) {
	res := make([]AckResult, len(acks))
	errs := make([]error, len(acks))
	users := make([]string, len(acks))
	for i, a := range acks {
		users[i] = a.User
	}
	left, err := r.routeEach(ctx, users, false, func(st *Store, idx []int) ([]int, error) {
		out, e := st.AckRegisteredDevices(ctx, pick(acks, idx))
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
		case errs[i] == nil:
			errs[i] = err
		default:
			errs[i] = errors.Join(errs[i], err)
		}
	}
	return res, errs
}
