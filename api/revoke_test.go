package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/live"
)

func wantStatus(t *testing.T, what string, err error, status int) {
	t.Helper()
	var se *obclient.StatusError
	switch {
	case status == 0 && err != nil:
		t.Errorf("%s: %v, want it answered", what, err)
	case status != 0 && (!errors.As(err, &se) || se.Status != status):
		t.Errorf("%s: %v, want %d", what, err, status)
	}
}

// TestARevokedDeviceOrUserIsClosedOnEveryNodeAndRefusedByREST: a user
// revokes their lost phone (POST /v1/devices/revoke); its sockets on both
// nodes close with 4013 within a few seconds, its token is refused by REST
// and by the live channel, the user's other devices go on, and a token
// minted after the revocation is accepted. Revoking the whole user (what
// `offlinebox revoke -user` records) then closes every device's socket.
func TestARevokedDeviceOrUserIsClosedOnEveryNodeAndRefusedByREST(t *testing.T) {
	le := newLiveEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	phoneTok := le.token("bob", "phone")
	phoneA := le.deviceWith(0, "bob", "phone", phoneTok)
	phoneA.connect()
	// A token not pinned to a device, used for the phone.
	unpinned := le.token("bob", "")
	laptop := le.device(1, "bob", "laptop")
	laptop.connect()
	alice := le.device(0, "alice", "phone")
	alice.connect()

	if _, err := laptop.http.RevokeDevice(ctx, "phone"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitClosed(t, phoneA, int(live.CloseRevoked))
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the revoked phone's socket closed %s after the revocation", d)
	}
	_, _, err := phoneA.http.Sync(ctx, obclient.SyncRequest{})
	wantStatus(t, "REST with the revoked phone's token", err, http.StatusUnauthorized)
	_, err = phoneA.http.DialLive(ctx, obclient.LiveOptions{})
	wantStatus(t, "the live channel with the revoked phone's token", err, http.StatusUnauthorized)
	// Each node learns of a revocation within a poll of the log (1 s).
	eventually(t, "node 1 refuses an older unpinned token used for the revoked phone", func() (bool, string) {
		ws, resp, err := websocket.Dial(ctx, strings.Replace(le.nodes[1].URL(), "http", "ws", 1)+"/v1/live?device_id=phone",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + unpinned}}})
		if err == nil {
			ws.CloseNow()
		}
		return resp != nil && resp.StatusCode == http.StatusUnauthorized, fmt.Sprint(err)
	})
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("node 1 refused the revoked phone %s after the revocation", d)
	}
	_, _, err = laptop.http.Sync(ctx, obclient.SyncRequest{})
	wantStatus(t, "REST with the laptop's token", err, 0)
	if laptop.live.Err() != nil || alice.live.Err() != nil {
		t.Fatalf("other devices' sockets ended: %v, %v", laptop.live.Err(), alice.live.Err())
	}
	// Token times are whole seconds: one minted in the second of the
	// revocation is covered too.
	time.Sleep(time.Until(start.Truncate(time.Second).Add(1100 * time.Millisecond)))
	phoneB := le.device(1, "bob", "phone")
	phoneB.connect()

	if err := le.store.Revoke(ctx, "bob", "", time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitClosed(t, phoneB, int(live.CloseRevoked))
	waitClosed(t, laptop, int(live.CloseRevoked))
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("bob's sockets on both nodes closed %s after the revocation", d)
	}
	_, _, err = laptop.http.Sync(ctx, obclient.SyncRequest{})
	wantStatus(t, "REST with bob's laptop token after bob was revoked", err, http.StatusUnauthorized)
	if alice.live.Err() != nil {
		t.Fatalf("alice's socket ended: %v", alice.live.Err())
	}
	_, _, err = alice.http.Sync(ctx, obclient.SyncRequest{})
	wantStatus(t, "REST as alice", err, 0)
}
