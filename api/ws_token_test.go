package api

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/live"
)

// deviceWith is a device of user that authenticates with tok.
func (le *liveEnv) deviceWith(node int, user, name, tok string) *device {
	return &device{t: le.t.(*testing.T), user: user, name: name, http: obclient.New(le.nodes[node].URL(), tok, nil)}
}

func (le *liveEnv) tokenFor(t *testing.T, user, dev string, ttl time.Duration) string {
	t.Helper()
	tok, err := le.keyring.Mint(user, dev, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestALiveConnectionEndsWithItsToken: a connection opened with a 2 s
// token is closed with 4012 at its exp plus the leeway (which hello
// names), as REST refuses the token from then on; one that sent reauth
// with a fresh token of its user and device lives on, and a reauth with
// another user's or device's token is refused and changes nothing.
func TestALiveConnectionEndsWithItsToken(t *testing.T) {
	const leeway = 500 * time.Millisecond
	le := newLiveEnvOpts(t, envOptions{leeway: leeway})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	short := le.tokenFor(t, "bob", "phone", 2*time.Second)
	phone := le.deviceWith(0, "bob", "phone", short)
	hello, _ := phone.connect()
	id, err := le.keyring.Verify(short)
	if err != nil {
		t.Fatal(err)
	}
	if want := id.Expires.Add(leeway).UnixMilli(); hello.ExpiresMS != want {
		t.Fatalf("hello names the end %d, want exp plus the leeway %d", hello.ExpiresMS, want)
	}
	laptop := le.deviceWith(1, "bob", "laptop", le.tokenFor(t, "bob", "laptop", 2*time.Second))
	lhello, _ := laptop.connect()
	for _, bad := range []struct{ tok, code string }{{le.tokenFor(t, "alice", "laptop", time.Hour), "forbidden"},
		{le.tokenFor(t, "bob", "phone", time.Hour), "forbidden"}, {"not-a-token", "unauthorized"}} {
		if err := laptop.live.Reauth(ctx, bad.tok); err != nil {
			t.Fatal(err)
		}
		if f := laptop.until("error", func(obclient.Frame) bool { return true }); f.Code != bad.code {
			t.Errorf("a reauth with a foreign or bad token was answered %s, want code %s", f.Raw, bad.code)
		}
	}
	if err := laptop.live.Reauth(ctx, le.tokenFor(t, "bob", "laptop", time.Hour)); err != nil {
		t.Fatal(err)
	}
	re := laptop.until("reauthed", func(obclient.Frame) bool { return true })
	if re.ExpiresMS < time.Now().Add(50*time.Minute).UnixMilli() {
		t.Fatalf("reauth moved the end to %d, want an hour ahead", re.ExpiresMS)
	}

	waitClosed(t, phone, int(live.CloseTokenExpired))
	if at := time.Now().UnixMilli(); at < hello.ExpiresMS-50 || at > hello.ExpiresMS+1500 {
		t.Errorf("closed at %d, %d ms from the token's end %d", at, at-hello.ExpiresMS, hello.ExpiresMS)
	}
	_, _, err = phone.http.Sync(ctx, obclient.SyncRequest{})
	var se *obclient.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		t.Errorf("REST with the expired token: %v, want 401", err)
	}
	// Past the laptop's first token's end, it is still open.
	time.Sleep(time.Until(time.UnixMilli(lhello.ExpiresMS + 500)))
	if f := laptop.quiet(300*time.Millisecond, "ping"); len(f) != 0 || laptop.live.Err() != nil {
		t.Fatalf("the reauthed connection got %v, ended %v", f, laptop.live.Err())
	}
}
