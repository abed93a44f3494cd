package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/ack_cursor_lib.lua
	ackCursorLibLua string
	//go:embed lua/ack_cursor.lua
	ackCursorLua    string
	ackCursorScript = redis.NewScript(ackCursorLibLua + ackCursorLua)
)

// AckItem acknowledges that a device stored a conversation up to Seq of
// Epoch.
type AckItem struct {
	Conv  string
	Seq   uint64
	Epoch uint64
}

// AckResult says what an ack did to the user's devices.
type AckResult struct {
	// WasEvicted: the device had been evicted before this ack; its cursor
	// was lost and it must resync in full.
	WasEvicted bool
	// Evicted lists the devices this ack pushed out (least recently used
	// beyond MaxDevices).
	Evicted []string
}

// AckDevice records a device's batch ack (see lua/ack_cursor.lua). The
// caller has checked each item against the conversation (membership, seq
// not beyond its max, epoch); this touches the user's slot only, so s is
// the store holding user's keys. ErrUserMoved: route the user again.
func (s *Store) AckDevice(ctx context.Context, user, device string, items []AckItem, nowMS int64) (AckResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var vals []any
	err := s.withDeviceSet(ctx, user, -1, func(devs, cursors []string) error {
		keys, args := s.ackCall(user, device, items, nowMS, devs, cursors)
		var err error
		vals, err = ackCursorScript.Run(ctx, s.rdb, keys, args...).Slice()
		return err
	})
	if err != nil {
		return AckResult{}, fmt.Errorf("ack %d conversations for %s/%s: %w", len(items), user, device, AsUserMoved(err))
	}
	return ackResultOf(vals), nil
}

// ackCall is the keys and arguments of lua/ack_cursor.lua, given the
// caller's read of the device set and the devices' cursor keys.
func (s *Store) ackCall(user, device string, items []AckItem, nowMS int64, devs, cursors []string) ([]string, []any) {
	args := make([]any, 0, 4+len(devs)+3*len(items))
	args = append(args, device, nowMS, s.cfg.MaxDevices, len(devs))
	for _, d := range devs {
		args = append(args, d)
	}
	for _, it := range items {
		args = append(args, it.Conv, it.Seq, it.Epoch)
	}
	keys := append([]string{s.keys.Devices(user), s.keys.Evicted(user), s.keys.Cursor(user, device), s.keys.Profile(user)}, cursors...)
	return keys, args
}

func ackResultOf(vals []any) AckResult {
	var res AckResult
	if len(vals) > 0 {
		res.WasEvicted = readReplyUint(vals[0]) == 1
	}
	for _, v := range vals[min(1, len(vals)):] {
		res.Evicted = append(res.Evicted, readReplyString(v))
	}
	return res
}

// deviceSetTries bounds how often a device-evicting script is run again
// because the device set changed between the caller's read and the script.
const deviceSetTries = 3

// withDeviceSet reads the user's n least recently used devices (all when
// n < 0) with their cursor keys and runs fn with them: the scripts that
// evict devices delete cursors, and every key a script touches must be in
// its KEYS. fn runs again, up to deviceSetTries times, while its script
// answers OBDEVICES (a device to evict was not named: the set changed).
//
// With n < 0 (an ack) fn first runs with no device named, without the
// read: a script evicts only when the user has more devices than kept,
// which is rare, and it answers OBDEVICES, changing nothing, when a victim
// was not named, so the read happens only then. That saves a round trip
// on nearly every ack.
func (s *Store) withDeviceSet(ctx context.Context, user string, n int64, fn func(devs, cursors []string) error) error {
	stop := n - 1
	if n < 0 {
		stop = -1
		if err := fn(nil, nil); !redis.HasErrorPrefix(err, refusalDevices) {
			return err
		}
	}
	var err error
	for range deviceSetTries {
		var devs []string
		if devs, err = s.rdb.ZRange(ctx, s.keys.Devices(user), 0, stop).Result(); err != nil {
			return fmt.Errorf("read devices: %w", err)
		}
		cursors := make([]string, len(devs))
		for i, d := range devs {
			cursors[i] = s.keys.Cursor(user, d)
		}
		if err = fn(devs, cursors); !redis.HasErrorPrefix(err, refusalDevices) {
			return err
		}
	}
	return err
}

// ParseCursors parses a device cursor hash (C -> seq, C:e -> epoch).
func ParseCursors(h map[string]string) map[string]Position {
	out := make(map[string]Position, len(h)/2)
	for f, v := range h {
		if len(f) > 2 && f[len(f)-2:] == ":e" {
			continue
		}
		out[f] = Position{Seq: readReplyUint(v), Epoch: readReplyUint(h[f+":e"])}
	}
	return out
}

// DeviceAck is one device's batch ack, for AckDevices.
type DeviceAck struct {
	User, Device string
	Items        []AckItem
	NowMS        int64
	// Registered: this connection's earlier ack registered the device
	// (AckRegisteredDevices raises its cursor alone).
	Registered bool
}

// AckDevices records several devices' acks, each as AckDevice does, in
// one pipeline; results and errors are per ack. An ack whose script
// answers OBDEVICES (it would evict a device it was not told of) runs
// again alone through AckDevice. s holds every one of the users' keys.
func (s *Store) AckDevices(ctx context.Context, acks []DeviceAck) ([]AckResult, []error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	calls := make([]scriptCall, len(acks))
	for i, a := range acks {
		keys, args := s.ackCall(a.User, a.Device, a.Items, a.NowMS, nil, nil)
		calls[i] = scriptCall{keys: keys, args: args}
	}
	res := make([]AckResult, len(acks))
	errs := make([]error, len(acks))
	cmds, err := s.evalPiped(ctx, ackCursorScript, calls)
	for i, a := range acks {
		cerr := err
		if i < len(cmds) && cmds[i] != nil {
			cerr = cmds[i].Err()
		}
		switch {
		case cerr == nil:
			vals, _ := cmds[i].Slice()
			res[i] = ackResultOf(vals)
		case redis.HasErrorPrefix(cerr, refusalDevices):
			res[i], errs[i] = s.AckDevice(ctx, a.User, a.Device, a.Items, a.NowMS)
		default:
			errs[i] = fmt.Errorf("ack %d conversations for %s/%s: %w", len(a.Items), a.User, a.Device, AsUserMoved(cerr))
		}
	}
	return res, errs
}
