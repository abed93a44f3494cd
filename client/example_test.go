package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The examples run against the fake API of the client's tests
// (fakeserver_test.go): two conversations of 120 messages each, which a
// sync answers 50 at a time with a gap below; against a real API, Base
// is its URL and Token one minted for a device (`offlinebox token alice
// -device phone`).

// exampleDevice opens a device on a fresh database against srv.
func exampleDevice(ctx context.Context, base string) (*Device, func()) {
	dir, err := os.MkdirTemp("", "offlinebox-example")
	if err != nil {
		panic(err)
	}
	d, err := Open(ctx, Options{Base: base, Token: testDeviceToken, Path: filepath.Join(dir, "alice.db"), NoLive: true})
	if err != nil {
		panic(err)
	}
	return d, func() { _ = d.Close(); _ = os.RemoveAll(dir) }
}

// Open a device on a local database and catch up: every message is
// stored before it is acked, gaps are paged in, and what a second catch-up
// finds is nothing new.
func ExampleOpen() {
	ctx := context.Background()
	_, srv := startFakeServer(120, 120, "team", "ops")
	defer srv.Close()
	d, closeDevice := exampleDevice(ctx, srv.URL)
	defer closeDevice()

	rep, err := d.CatchUp(ctx)
	if err != nil {
		fmt.Println("catch up:", err)
		return
	}
	for _, conv := range []string{"team", "ops"} {
		n, _ := d.Store().Count(ctx, conv)
		fmt.Printf("%s: %d messages stored\n", conv, n)
	}
	again, _ := d.CatchUp(ctx)
	fmt.Println("stored on the first catch-up:", rep.Stored, "on the second:", again.Stored)
	// Output:
	// team: 120 messages stored
	// ops: 120 messages stored
	// stored on the first catch-up: 240 on the second: 0
}

// List the conversations, most recently active first, one page at a time.
func ExampleDevice_Conversations() {
	ctx := context.Background()
	_, srv := startFakeServer(3, 3, "team", "ops")
	defer srv.Close()
	d, closeDevice := exampleDevice(ctx, srv.URL)
	defer closeDevice()
	if _, err := d.CatchUp(ctx); err != nil {
		fmt.Println("catch up:", err)
		return
	}
	list, err := d.Conversations(ctx, "", 50)
	if err != nil {
		fmt.Println("list:", err)
		return
	}
	for _, c := range list.Conversations {
		fmt.Printf("%s: last seq %d\n", c.ConvID, c.LastSeq)
	}
	// Output:
	// team: last seq 3
	// ops: last seq 3
}

// Send a message: it is kept in the device's sending table until the
// server sequences it and a catch-up brings it back with its seq.
func ExampleDevice_Send() {
	ctx := context.Background()
	_, srv := startFakeServer(0, 0, "team")
	defer srv.Close()
	d, closeDevice := exampleDevice(ctx, srv.URL)
	defer closeDevice()

	id, err := d.Send(ctx, Outgoing{ConvID: "team", ConvType: "group", ContentType: "text/plain", Body: []byte("hello")})
	if err != nil {
		fmt.Println("send:", err)
		return
	}
	if _, err := d.Flush(ctx); err != nil {
		fmt.Println("flush:", err)
		return
	}
	before, _ := d.Pending(ctx)
	if _, err := d.CatchUp(ctx); err != nil {
		fmt.Println("catch up:", err)
		return
	}
	after, _ := d.Pending(ctx)
	msgs, _ := d.Store().Messages(ctx, "team", 0, 10)
	fmt.Println("pending before the catch-up:", len(before), "after:", len(after))
	fmt.Println("stored:", len(msgs), "with its client_msg_id:", msgs[0].ClientMsgID == id)
	// Output:
	// pending before the catch-up: 1 after: 0
	// stored: 1 with its client_msg_id: true
}

// Listen on the live channel: the server's first frame is hello; every
// frame after it is a push to store (and ack) or a notice to sync.
func ExampleClient_DialLive() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, srv := startFakeServer(0, 0, "team")
	f.live = make(chan struct{}, 1)
	defer srv.Close()

	live, err := New(srv.URL, testDeviceToken, nil).DialLive(ctx, LiveOptions{})
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer live.CloseNow()
	hello, err := live.Next(ctx)
	if err != nil {
		fmt.Println("read:", err)
		return
	}
	f.live <- struct{}{}
	notice, err := live.Next(ctx)
	if err != nil {
		fmt.Println("read:", err)
		return
	}
	fmt.Println(hello.Type, "from", hello.Node+";", "then a", notice.Type)
	// Output:
	// hello from fake; then a notice
}
