package client

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"testing"
)

// testDeviceToken is a token's shape with a device claim; the fake
// servers of these tests do not verify it.
var testDeviceToken = fakeToken(`{"sub":"u","dev":"d"}`)

func fakeToken(payload string) string {
	return "eyJhbGciOiJIUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".c2ln"
}

func TestOpenRefusesATokenWithoutADeviceClaim(t *testing.T) {
	cases := []struct {
		name, token string
		noDevice    bool
	}{
		{"no dev claim", fakeToken(`{"sub":"alice"}`), true},
		{"an empty dev claim", fakeToken(`{"sub":"alice","dev":""}`), true},
		{"not a JWT", "t", false},
		{"a payload that is not JSON", fakeToken(`nope`), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Open(context.Background(), Options{Base: "http://127.0.0.1:1", Token: c.token, Path: filepath.Join(t.TempDir(), "d.db")})
			if err == nil {
				_ = d.Close()
				t.Fatal("Open accepted the token")
			}
			if errors.Is(err, ErrNoDevice) != c.noDevice {
				t.Errorf("Open: %v; want ErrNoDevice %v", err, c.noDevice)
			}
		})
	}
	d, err := Open(context.Background(), Options{Base: "http://127.0.0.1:1", Token: testDeviceToken, Path: filepath.Join(t.TempDir(), "d.db")})
	if err != nil {
		t.Fatalf("Open with a device token: %v", err)
	}
	_ = d.Close()
}
