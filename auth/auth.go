package auth

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/offlinebox/offlinebox/bounds"
	"github.com/offlinebox/offlinebox/schemas"
)

// MinSecretBytes is the shortest secret accepted: HS256 is only as strong as
// its key.
const MinSecretBytes = 16

// Defaults of Config.
const (
	DefaultTTL    = 24 * time.Hour
	DefaultLeeway = 30 * time.Second
)

// Sentinel errors. Every failure of Verify wraps ErrInvalidToken; a request
// without a token gets ErrNoToken from FromRequest.
var (
	ErrNoToken      = errors.New("no bearer token")
	ErrInvalidToken = errors.New("invalid token")
)

// Config configures the token keyring. Zero values take the defaults.
type Config struct {
	// Secret signs and verifies every token.
	Secret []byte
	// TTL of minted tokens.
	TTL time.Duration
	// Leeway tolerated on expiry and not-before, for clock skew.
	Leeway time.Duration
	// Now is the clock (time.Now when nil); tests move it.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	c.Leeway = cmp.Or(c.Leeway, DefaultLeeway)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	return bounds.First("auth",
		bounds.If(len(c.Secret) < MinSecretBytes, "Secret is %d bytes, fewer than %d", len(c.Secret), MinSecretBytes),
		bounds.NotNegative("TTL", c.TTL),
		bounds.NotNegative("Leeway", c.Leeway),
	)
}

// Identity is who a verified token speaks for, and for how long.
type Identity struct {
	User string
	// Device is empty when the token is not pinned to a device.
	Device string
	// Expires is the token's exp; Issued its iat (zero when it has none):
	// a revocation covers the tokens issued before it.
	Expires, Issued time.Time
}

// claims is the token payload: the registered claims plus "dev".
type claims struct {
	jwt.RegisteredClaims
	Device string `json:"dev,omitempty"`
}

// maxNumericDate is the last second of year 9999: a later date is no date.
const maxNumericDate = 253402300799

// UnmarshalJSON decodes the payload, refusing what jwt would otherwise
// take: a time claim (exp, nbf, iat) that is not a JSON number (jwt reads
// "exp":"9999999999" as a number) or is outside 0..year 9999, and a claim
// given twice (readers would disagree on which one counts).
func (c *claims) UnmarshalJSON(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return errors.New("claims are not a JSON object")
	}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return fmt.Errorf("read claims: %w", err)
		}
		name, _ := t.(string)
		if seen[name] {
			return fmt.Errorf("claim %q is given twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return fmt.Errorf("read claim %q: %w", name, err)
		}
		switch name {
		case "exp", "nbf", "iat":
			f, err := strconv.ParseFloat(string(raw), 64)
			if err != nil || !isJSONNumber(raw) || f < 0 || f > maxNumericDate {
				return fmt.Errorf("claim %q is %s, not a number of seconds within year 9999", name, raw)
			}
		}
	}
	type plain claims // without this method
	return json.Unmarshal(data, (*plain)(c))
}

func isJSONNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// Keyring mints and verifies tokens under one secret. It is safe for
// concurrent use.
type Keyring struct {
	cfg      Config
	parser   *jwt.Parser
	verified *verifiedTokens
}

// New returns a Keyring for cfg.
func New(cfg Config) (*Keyring, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Secret = append([]byte(nil), cfg.Secret...)
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), // an iat beyond the leeway ahead is refused
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
	)
	return &Keyring{cfg: cfg, parser: p, verified: newVerifiedTokens()}, nil
}

// Mint signs a token for user, pinned to device when device is not empty,
// valid for the configured TTL (ttl > 0 overrides it).
func (k *Keyring) Mint(user, device string, ttl time.Duration) (string, error) {
	if err := schemas.ValidID("user", user); err != nil {
		return "", fmt.Errorf("mint token: %w", err)
	}
	if device != "" {
		if err := schemas.ValidID("device", device); err != nil {
			return "", fmt.Errorf("mint token: %w", err)
		}
	}
	if ttl <= 0 {
		ttl = k.cfg.TTL
	}
	now := k.cfg.Now()
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   user,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Device: device,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(k.cfg.Secret)
	if err != nil {
		return "", fmt.Errorf("sign token for %s: %w", user, err)
	}
	return s, nil
}

// Verify checks a token's algorithm, signature, expiry (a numeric exp is
// required), issue time (not ahead of the clock beyond the leeway) and
// claims and returns whom it speaks for. Every error wraps ErrInvalidToken.
func (k *Keyring) Verify(token string) (Identity, error) {
	digest := sha256.Sum256([]byte(token))
	if id, ok := k.verified.get(digest, k.cfg.Now()); ok {
		return id, nil
	}
	var c claims
	_, err := k.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		return k.cfg.Secret, nil
	})
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if err := schemas.ValidID("sub", c.Subject); err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if c.Device != "" {
		if err := schemas.ValidID("dev", c.Device); err != nil {
			return Identity{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
		}
	}
	id := Identity{User: c.Subject, Device: c.Device}
	if c.IssuedAt != nil {
		id.Issued = c.IssuedAt.Time
	}
	if c.ExpiresAt != nil { // required by the parser
		id.Expires = c.ExpiresAt.Time
		k.verified.put(digest, id, c.ExpiresAt.Time, k.cfg.Now())
	}
	return id, nil
}

// Leeway is the tolerance on expiry: a token is accepted until its exp
// plus it.
func (k *Keyring) Leeway() time.Duration { return k.cfg.Leeway }

// FromRequest extracts the bearer token of an Authorization header.
func FromRequest(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", ErrNoToken
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", fmt.Errorf("%w: Authorization is not a bearer token", ErrInvalidToken)
	}
	return strings.TrimSpace(token), nil
}
