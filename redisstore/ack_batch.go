package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/ack_cursor_raise.lua
	ackCursorRaiseLua    string
	ackCursorRaiseScript = redis.NewScript(ackCursorLibLua + ackCursorRaiseLua)
)

// DeviceTouchInterval is how stale a registered device's last use may get
// before an ack writes it again (lua/ack_cursor_raise.lua): the order in
// which devices are evicted is the order of their last use to within it,
// and most acks of a connected device write only its cursor.
const DeviceTouchInterval = 30 * time.Second

// ackRaisePerCall bounds one call of lua/ack_cursor_raise.lua, weighed
// as a device plus its conversations: a call runs alone on its server.
const ackRaisePerCall = 1024

// AckRegisteredDevices records several devices' acks in one pipeline (a
// Cluster client sends one per node). The acks marked Registered (their
// connection already ran ack_cursor.lua for the device) only raise the
// cursors (lua/ack_cursor_raise.lua), the devices whose keys share a hash
// slot in one call (all of them on a standalone server); the others, and
// a registered device found evicted since, take the full step of
// AckDevices, which registers the device afresh and reports WasEvicted.
// s holds every one of the users' keys; results and errors are per ack
// (ErrUserMoved: route again).
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
	for _, i := range s.raiseRegistered(ctx, acks, lean, errs) {
		full, fullAt = append(full, acks[i]), append(fullAt, i)
	}
	if len(full) > 0 {
		r, e := s.AckDevices(ctx, full)
		for j, i := range fullAt {
			res[i], errs[i] = r[j], e[j]
		}
	}
	return res, errs
}

// raiseRegistered runs lua/ack_cursor_raise.lua for the acks at idx, in
// one pipeline, and sets their errors; it returns those of devices no
// longer registered.
func (s *Store) raiseRegistered(ctx context.Context, acks []DeviceAck, idx []int, errs []error) (unregistered []int) {
	if len(idx) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	groups := s.slotCalls(len(idx), ackRaisePerCall, func(j int) int { return 1 + len(acks[idx[j]].Items) },
		func(j int) string { return s.keys.Devices(acks[idx[j]].User) })
	calls := make([]scriptCall, len(groups))
	for g, js := range groups {
		calls[g] = s.ackRaiseCall(acks, idx, js)
	}
	cmds, err := s.evalPiped(ctx, ackCursorRaiseScript, calls)
	for g, js := range groups {
		cerr := err
		var vals []any
		if g < len(cmds) && cmds[g] != nil {
			vals, cerr = cmds[g].Slice()
		}
		if cerr == nil && len(vals) != len(js) {
			cerr = fmt.Errorf("%w: %d statuses for %d devices", ErrMalformedReply, len(vals), len(js))
		}
		for k, j := range js {
			i, a := idx[j], acks[idx[j]]
			switch {
			case cerr != nil:
				errs[i] = fmt.Errorf("raise %d cursors of %s/%s: %w", len(a.Items), a.User, a.Device, AsUserMoved(cerr))
			case readReplyUint(vals[k]) == ackRaiseStatusUnregistered:
				unregistered = append(unregistered, i)
			case readReplyUint(vals[k]) == ackRaiseStatusMoved:
				errs[i] = fmt.Errorf("raise %d cursors of %s/%s: %w", len(a.Items), a.User, a.Device, ErrUserMoved)
			}
		}
	}
	return unregistered
}

// ackRaiseCall is the keys and arguments of one call of
// lua/ack_cursor_raise.lua: the acks idx[j] for j in js.
func (s *Store) ackRaiseCall(acks []DeviceAck, idx, js []int) scriptCall {
	keys := make([]string, 0, 3*len(js))
	args := []any{acks[idx[js[0]]].NowMS, DeviceTouchInterval.Milliseconds()}
	for _, j := range js {
		a := acks[idx[j]]
		args[0] = max(args[0].(int64), a.NowMS)
		keys = append(keys, s.keys.Devices(a.User), s.keys.Cursor(a.User, a.Device), s.keys.Profile(a.User))
		args = append(args, a.Device, len(a.Items))
		for _, it := range a.Items {
			args = append(args, it.Conv, it.Seq, it.Epoch)
		}
	}
	return scriptCall{keys: keys, args: args}
}

// AckRegisteredDevices records devices' acks (see
// Store.AckRegisteredDevices), one pipeline per store. An ack whose user
// turns out moved is routed again and applied once more (each step only
// raises, so applying it again changes nothing). Results and errors are
// per ack.
func (r *InboxRouter) AckRegisteredDevices(ctx context.Context, acks []DeviceAck) ([]AckResult, []error) {
	return routeItems(ctx, r, acks, func(a DeviceAck) string { return a.User }, false, (*Store).AckRegisteredDevices)
}
