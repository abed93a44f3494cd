package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestAckRaisesOnlyTheDevicesCursorPerEpoch(t *testing.T) {
	s := readTestStore(t, 100)
	ctx := context.Background()
	steps := []struct {
		ack  AckItem
		want string
	}{
		{AckItem{"g", 5, 100}, "5@100"},
		{AckItem{"g", 3, 100}, "5@100"}, // a late, lower ack changes nothing
		{AckItem{"g", 9, 100}, "9@100"},
		{AckItem{"g", 2, 200}, "2@200"},  // a rebuilt timeline restarts the cursor
		{AckItem{"g", 50, 100}, "2@200"}, // an ack of the old epoch is ignored
	}
	for i, st := range steps {
		if _, err := s.AckDevice(ctx, "ann", "phone", []AckItem{st.ack}, int64(1000+i)); err != nil {
			t.Fatal(err)
		}
		h := s.rdb.HGetAll(ctx, s.keys.Cursor("ann", "phone")).Val()
		if got := h["g"] + "@" + h["g:e"]; got != st.want {
			t.Fatalf("step %d (%+v): cursor %s, want %s", i, st.ack, got, st.want)
		}
	}
	if n := s.rdb.Exists(ctx, s.keys.Cursor("ann", "laptop")).Val(); n != 0 {
		t.Fatal("another device's cursor moved")
	}
}

func TestAckEvictsTheLeastRecentlyUsedSixthDevice(t *testing.T) {
	s := readTestStore(t, 100)
	ctx := context.Background()
	ack := func(dev string, at int64) AckResult {
		t.Helper()
		r, err := s.AckDevice(ctx, "ann", dev, []AckItem{{"g", uint64(at), 1}}, at)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for i := range 5 {
		if r := ack(fmt.Sprint("d", i), int64(10+i)); len(r.Evicted) != 0 || r.WasEvicted {
			t.Fatalf("device %d: %+v", i, r)
		}
	}
	ack("d0", 20) // d0 used again: d1 is now the least recently used
	r := ack("d5", 21)
	if fmt.Sprint(r.Evicted) != "[d1]" {
		t.Fatalf("evicted %v, want [d1]", r.Evicted)
	}
	if s.rdb.Exists(ctx, s.keys.Cursor("ann", "d1")).Val() != 0 {
		t.Fatal("evicted device kept its cursor")
	}
	if n := s.rdb.ZCard(ctx, s.keys.Devices("ann")).Val(); n != 5 {
		t.Fatalf("%d devices kept, want 5", n)
	}
	r = ack("d1", 22)
	if !r.WasEvicted || fmt.Sprint(r.Evicted) != "[d2]" {
		t.Fatalf("returning device: %+v, want told it was evicted and d2 out", r)
	}
}

// An ack that evicts runs twice (first without the device set, which it
// then reads); the delivered raise of the first run must still be told.
func TestAckAndRaiseThatEvictsReportsTheRaise(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	s, err := New(rdb, Config{Prefix: prefix, MaxDevices: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rdb.HSet(ctx, s.keys.ConvMeta("g"), "epoch", 7)
	rdb.HSet(ctx, s.keys.Members("g"), "ann", 1) // receipts count members only
	rdb.ZAdd(ctx, s.keys.Devices("ann"), redis.Z{Member: "old", Score: 1})
	res, raised, err := s.AckAndRaise(ctx, "ann", "new", []AckItem{{Conv: "g", Seq: 3, Epoch: 7}}, 1000,
		[]ReceiptMark{{Conv: "g", Epoch: 7, Member: "ann", Seq: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Evicted) != 1 || res.Evicted[0] != "old" {
		t.Fatalf("evicted %v, want [old]", res.Evicted)
	}
	if len(raised) != 1 || !raised[0].Raised || raised[0].Prev != 0 {
		t.Fatalf("raised %+v, want one raise from 0", raised)
	}
}

// AckDevices writes each device's cursors as AckDevice would, and an ack
// that evicts a device it was not told of runs again alone and evicts it.
func TestAckDevicesWritesEveryDeviceAndEvictsThroughARetry(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	s, err := New(rdb, Config{Prefix: prefix, MaxDevices: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rdb.ZAdd(ctx, s.keys.Devices("cat"), redis.Z{Member: "old", Score: 1})
	rdb.HSet(ctx, s.keys.Cursor("cat", "old"), "g", 1)
	acks := []DeviceAck{
		{User: "ann", Device: "phone", Items: []AckItem{{Conv: "g", Seq: 4, Epoch: 7}}, NowMS: 1000},
		{User: "bob", Device: "phone", Items: []AckItem{{Conv: "g", Seq: 5, Epoch: 7}, {Conv: "d", Seq: 2, Epoch: 3}}, NowMS: 1000},
		{User: "cat", Device: "new", Items: []AckItem{{Conv: "g", Seq: 6, Epoch: 7}}, NowMS: 1000},
	}
	res, errs := s.AckDevices(ctx, acks)
	for i, a := range acks {
		if errs[i] != nil {
			t.Fatalf("ack of %s: %v", a.User, errs[i])
		}
		h := rdb.HGetAll(ctx, s.keys.Cursor(a.User, a.Device)).Val()
		for _, it := range a.Items {
			if got, want := h[it.Conv]+"@"+h[it.Conv+":e"], fmt.Sprintf("%d@%d", it.Seq, it.Epoch); got != want {
				t.Fatalf("%s/%s cursor of %s: %s, want %s", a.User, a.Device, it.Conv, got, want)
			}
		}
	}
	if len(res[2].Evicted) != 1 || res[2].Evicted[0] != "old" || rdb.Exists(ctx, s.keys.Cursor("cat", "old")).Val() != 0 {
		t.Fatalf("cat's old device was not evicted with its cursor: %+v", res[2])
	}
	if len(res[0].Evicted)+len(res[1].Evicted) != 0 {
		t.Fatalf("devices evicted from users with one: %+v %+v", res[0], res[1])
	}
}

// One ack of many conversations (more than one chunk of fields, a
// conversation named twice, newer and older epochs) leaves the cursor one
// ack per item leaves.
func TestAckOfManyConversationsWritesWhatOneAckPerItemWrites(t *testing.T) {
	ctx := context.Background()
	batched, single := readTestStore(t, 100), readTestStore(t, 100)
	var first, second []AckItem
	for i := range 400 {
		c := fmt.Sprintf("c%03d", i)
		first = append(first, AckItem{c, uint64(10 + i%7), 100})
		switch i % 4 {
		case 0:
			second = append(second, AckItem{c, 5, 100}) // lower: nothing
		case 1:
			second = append(second, AckItem{c, 3, 200}, AckItem{c, 8, 200}) // a new epoch, raised again
		case 2:
			second = append(second, AckItem{c, 90, 50}) // an older epoch: nothing
		default:
			second = append(second, AckItem{c, 30, 100}, AckItem{c, 20, 100})
		}
	}
	for n, items := range [][]AckItem{first, second} {
		if _, err := batched.AckDevice(ctx, "ann", "phone", items, int64(1000+n)); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if _, err := single.AckDevice(ctx, "ann", "phone", []AckItem{it}, int64(1000+n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := batched.rdb.HGetAll(ctx, batched.keys.Cursor("ann", "phone")).Val()
	o := single.rdb.HGetAll(ctx, single.keys.Cursor("ann", "phone")).Val()
	if fmt.Sprint(b) != fmt.Sprint(o) {
		t.Fatalf("one ack\n%v\none per item\n%v", b, o)
	}
	for c, want := range map[string]string{"c000": "10@100", "c001": "8@200", "c002": "12@100", "c003": "30@100"} {
		if got := b[c] + "@" + b[c+":e"]; got != want {
			t.Errorf("%s: cursor %s, want %s", c, got, want)
		}
	}
}
