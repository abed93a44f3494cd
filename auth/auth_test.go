package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func newTestKeyring(t *testing.T, now time.Time) *Keyring {
	t.Helper()
	k, err := New(Config{Secret: testSecret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func signWith(t *testing.T, m jwt.SigningMethod, key any, c jwt.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMintedTokenVerifiesToItsUserAndDevice(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	k := newTestKeyring(t, now)
	for _, tc := range []struct{ user, device string }{{"alice", ""}, {"bob", "phone-1"}} {
		tok, err := k.Mint(tc.user, tc.device, 0)
		if err != nil {
			t.Fatal(err)
		}
		id, err := k.Verify(tok)
		if err != nil {
			t.Fatalf("verify %s: %v", tc.user, err)
		}
		if id.User != tc.user || id.Device != tc.device {
			t.Fatalf("got %+v, want user %q device %q", id, tc.user, tc.device)
		}
		if !id.Issued.Equal(now) || !id.Expires.Equal(now.Add(DefaultTTL)) {
			t.Fatalf("got issued %s, expires %s, want %s and %s", id.Issued, id.Expires, now, now.Add(DefaultTTL))
		}
	}
}

func TestVerifyRefusesForgedExpiredAndMalformedTokens(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	k := newTestKeyring(t, now)
	valid := func(sub string) jwt.RegisteredClaims {
		return jwt.RegisteredClaims{Subject: sub, ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}
	}
	expired, err := newTestKeyring(t, now.Add(-48*time.Hour)).Mint("alice", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		token string
	}{
		{"alg none", signWith(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid("alice"))},
		{"alg HS384", signWith(t, jwt.SigningMethodHS384, testSecret, valid("alice"))},
		{"other secret", signWith(t, jwt.SigningMethodHS256, []byte("another-secret-of-enough-bytes!!"), valid("alice"))},
		{"expired", expired},
		{"no expiry", signWith(t, jwt.SigningMethodHS256, testSecret, jwt.RegisteredClaims{Subject: "alice"})},
		{"no subject", signWith(t, jwt.SigningMethodHS256, testSecret, valid(""))},
		{"subject with separator", signWith(t, jwt.SigningMethodHS256, testSecret, valid("a{b}:c"))},
		{"bad device claim", signWith(t, jwt.SigningMethodHS256, testSecret, claims{RegisteredClaims: valid("alice"), Device: "x:y"})},
		{"exp as a string", signWith(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "exp": "9999999999"})},
		{"exp as an object", signRaw(t, `{"sub":"alice","exp":{"n":9999999999}}`)},
		{"exp beyond year 9999", signRaw(t, `{"sub":"alice","exp":1e300}`)},
		{"negative exp", signRaw(t, `{"sub":"alice","exp":-1}`)},
		{"exp given twice", signRaw(t, fmt.Sprintf(`{"sub":"alice","exp":%d,"exp":%d}`, now.Add(-time.Hour).Unix(), now.Add(time.Hour).Unix()))},
		{"iat in the future", signWith(t, jwt.SigningMethodHS256, testSecret, jwt.RegisteredClaims{Subject: "alice",
			IssuedAt: jwt.NewNumericDate(now.Add(time.Hour)), ExpiresAt: jwt.NewNumericDate(now.Add(2 * time.Hour))})},
		{"iat as a string", signRaw(t, fmt.Sprintf(`{"sub":"alice","iat":"%d","exp":%d}`, now.Unix(), now.Add(time.Hour).Unix()))},
		{"garbage", "not.a.token"},
		{"empty", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := k.Verify(tc.token)
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("Verify = %+v, %v; want ErrInvalidToken", id, err)
			}
		})
	}
}

// signRaw signs a payload written by hand (HS256, the test secret).
func signRaw(t *testing.T, payload string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(payload))
	sig, err := jwt.SigningMethodHS256.Sign(head, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + enc.EncodeToString(sig)
}

func TestVerifyTakesTimeClaimsWithinTheLeewayAndFractionalSeconds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	k := newTestKeyring(t, now)
	for name, payload := range map[string]string{
		"iat a little ahead (clock skew)": fmt.Sprintf(`{"sub":"alice","iat":%d,"exp":%d}`, now.Add(10*time.Second).Unix(), now.Add(time.Hour).Unix()),
		"fractional exp":                  fmt.Sprintf(`{"sub":"alice","exp":%d.5}`, now.Add(time.Hour).Unix()),
		"no iat":                          fmt.Sprintf(`{"sub":"alice","exp":%d}`, now.Add(time.Hour).Unix()),
	} {
		if id, err := k.Verify(signRaw(t, payload)); err != nil || id.User != "alice" {
			t.Errorf("%s: Verify = %+v, %v; want alice", name, id, err)
		}
	}
}

func TestFromRequestNeedsABearerHeader(t *testing.T) {
	cases := []struct {
		header string
		want   string
		err    error
	}{
		{"Bearer abc.def.ghi", "abc.def.ghi", nil},
		{"bearer   abc", "abc", nil},
		{"", "", ErrNoToken},
		{"Basic dXNlcjpwYXNz", "", ErrInvalidToken},
		{"Bearer ", "", ErrInvalidToken},
		{"Bearer", "", ErrInvalidToken},
	}
	for _, tc := range cases {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		got, err := FromRequest(r)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("header %q: got %q, %v; want %q, %v", tc.header, got, err, tc.want, tc.err)
		}
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Secret: []byte("short")}, "Secret"},
		{Config{Secret: testSecret, TTL: -time.Second}, "TTL"},
		{Config{Secret: testSecret, Leeway: -time.Second}, "Leeway"},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	if err := (Config{Secret: testSecret}).Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}
