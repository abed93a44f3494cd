package redisstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestAckOfARegisteredDeviceRaisesItsCursorAsTheFullStepDoes(t *testing.T) {
	s := readTestStore(t, 100)
	ctx := context.Background()
	if _, err := s.AckDevice(ctx, "ann", "phone", []AckItem{{"g", 1, 100}}, 1000); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		ack  AckItem
		want string
	}{
		{AckItem{"g", 5, 100}, "5@100"},
		{AckItem{"g", 3, 100}, "5@100"}, // a late, lower ack changes nothing
		{AckItem{"g", 9, 100}, "9@100"},
		{AckItem{"g", 2, 200}, "2@200"},  // a newer epoch replaces the cursor
		{AckItem{"g", 50, 100}, "2@200"}, // an ack of the old epoch is ignored
	}
	for i, st := range steps {
		res, errs := s.AckRegisteredDevices(ctx, []DeviceAck{{User: "ann", Device: "phone", Items: []AckItem{st.ack}, NowMS: int64(1001 + i), Registered: true}})
		if errs[0] != nil || res[0].WasEvicted {
			t.Fatalf("step %d: %+v, %v", i, res[0], errs[0])
		}
		h := s.rdb.HGetAll(ctx, s.keys.Cursor("ann", "phone")).Val()
		if got := h["g"] + "@" + h["g:e"]; got != st.want {
			t.Fatalf("step %d (%+v): cursor %s, want %s", i, st.ack, got, st.want)
		}
	}
}

func TestAckOfARegisteredDeviceTouchesItsLastUseOnlyWhenStale(t *testing.T) {
	s := readTestStore(t, 100)
	ctx := context.Background()
	if _, err := s.AckDevice(ctx, "ann", "phone", []AckItem{{"g", 1, 1}}, 1000); err != nil {
		t.Fatal(err)
	}
	touch := DeviceTouchInterval.Milliseconds()
	for _, st := range []struct {
		now, want int64
	}{
		{1000 + touch - 1, 1000},     // within the interval: the set is not written
		{1000 + touch, 1000 + touch}, // stale: written again
		{1001 + touch, 1000 + touch}, // fresh again
	} {
		if _, errs := s.AckRegisteredDevices(ctx, []DeviceAck{{User: "ann", Device: "phone", Items: []AckItem{{"g", 2, 1}}, NowMS: st.now, Registered: true}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		if got := int64(s.rdb.ZScore(ctx, s.keys.Devices("ann"), "phone").Val()); got != st.want {
			t.Fatalf("ack at %d: last use %d, want %d", st.now, got, st.want)
		}
	}
}

func TestARegisteredDeviceEvictedSinceIsRegisteredAfreshAndToldToResync(t *testing.T) {
	s := readTestStore(t, 100)
	ctx := context.Background()
	for i := range 6 { // the sixth evicts d0, the least recently used
		if _, err := s.AckDevice(ctx, "ann", fmt.Sprint("d", i), []AckItem{{"g", 1, 1}}, int64(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	res, errs := s.AckRegisteredDevices(ctx, []DeviceAck{
		{User: "ann", Device: "d0", Items: []AckItem{{"g", 3, 1}}, NowMS: 30, Registered: true},
		{User: "ann", Device: "d5", Items: []AckItem{{"g", 4, 1}}, NowMS: 31, Registered: true},
	})
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if !res[0].WasEvicted || fmt.Sprint(res[0].Evicted) != "[d1]" {
		t.Fatalf("the evicted device's ack: %+v, want resync, evicting d1", res[0])
	}
	if res[1].WasEvicted || len(res[1].Evicted) != 0 {
		t.Fatalf("the registered device's ack: %+v, want nothing to tell", res[1])
	}
	if got := s.rdb.HGet(ctx, s.keys.Cursor("ann", "d0"), "g").Val(); got != "3" {
		t.Fatalf("the evicted device's cursor %q, want 3", got)
	}
}

func TestRegisteredDevicesOfManyUsersShareACallAndAMovedUserFailsAlone(t *testing.T) {
	s := readTestStore(t, 100)
	ctx := context.Background()
	users := []string{"ann", "bo", "cy"}
	for _, u := range users {
		if _, err := s.AckDevice(ctx, u, "phone", []AckItem{{"g", 1, 1}}, 1000); err != nil {
			t.Fatal(err)
		}
	}
	s.rdb.HSet(ctx, s.keys.Profile("cy"), "loc", "hot")
	acks := make([]DeviceAck, len(users))
	for i, u := range users {
		acks[i] = DeviceAck{User: u, Device: "phone", Items: []AckItem{{"g", uint64(5 + i), 1}, {"h", 2, 1}}, NowMS: 1001, Registered: true}
	}
	var calls int
	s.rdb.(*redis.Client).AddHook(commandHook(func(c redis.Cmder) {
		if name := c.Name(); name == "evalsha" || name == "eval" {
			calls++
		}
	}))
	_, errs := s.AckRegisteredDevices(ctx, acks)
	if calls != 1 {
		t.Fatalf("%d script calls for three registered devices on one server, want 1", calls)
	}
	for i, u := range users[:2] {
		if errs[i] != nil {
			t.Fatalf("%s: %v", u, errs[i])
		}
		h := s.rdb.HGetAll(ctx, s.keys.Cursor(u, "phone")).Val()
		if h["g"] != fmt.Sprint(5+i) || h["h"] != "2" {
			t.Fatalf("%s's cursor %v", u, h)
		}
	}
	if !errors.Is(errs[2], ErrUserMoved) {
		t.Fatalf("the moved user's ack: %v, want ErrUserMoved", errs[2])
	}
	if got := s.rdb.HGet(ctx, s.keys.Cursor("cy", "phone"), "g").Val(); got != "1" {
		t.Fatalf("the moved user's cursor moved to %s", got)
	}
}
