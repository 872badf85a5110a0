package lti

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"capacitylab/store"
)

// The tool's keys.
const (
	keyBits = 2048
	// keysKept: the key that signs, the one before it (tokens it signed
	// a moment ago still verify) and a new one waiting to sign.
	keysKept = 3
	// JWKSMaxAge is how long platforms may cache the tool's JWKS
	// (Cache-Control max-age of GET /lti/jwks.json).
	JWKSMaxAge = 5 * time.Minute
	// KeyPublishDelay is how long a rotated-in key is published before it
	// signs: longer than JWKSMaxAge, so every platform that caches our
	// keys has fetched it by the time it sees a token signed with it.
	KeyPublishDelay = 10 * time.Minute
)

// KeyStore is what the key commands need; *store.Store implements it.
type KeyStore interface {
	AddLTIKey(ctx context.Context, k store.LTIKey, keep int) error
	LTIKeys(ctx context.Context) ([]store.LTIKey, error)
}

// toolKey is one of our keys, parsed.
type toolKey struct {
	id        string
	priv, pub jwk.Key
	signsFrom time.Time
}

// newKey generates an RSA key; its kid is its RFC 7638 thumbprint.
func newKey(now, signsFrom time.Time) (store.LTIKey, error) {
	raw, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return store.LTIKey{}, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(raw)
	if err != nil {
		return store.LTIKey{}, err
	}
	k, err := jwk.Import(raw)
	if err != nil {
		return store.LTIKey{}, err
	}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return store.LTIKey{}, err
	}
	return store.LTIKey{
		ID:         base64.RawURLEncoding.EncodeToString(tp),
		PrivatePEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		CreatedAt:  now, SignsFrom: signsFrom,
	}, nil
}

// EnsureKey makes the tool's first key, signing at once, when there is
// none; it reports whether it made one.
func EnsureKey(ctx context.Context, st KeyStore, now time.Time) (bool, error) {
	keys, err := st.LTIKeys(ctx)
	if err != nil || len(keys) > 0 {
		return false, err
	}
	k, err := newKey(now, now)
	if err != nil {
		return false, err
	}
	return true, st.AddLTIKey(ctx, k, keysKept)
}

// RotateKey adds a new key. It is published at once and signs from
// KeyPublishDelay later (at once with immediate, for a key that leaked:
// platforms then fetch our keys again when they meet its kid). The key
// that signed until then stays published; older ones are deleted. A
// rotation while the last new key does not sign yet is refused, unless
// immediate.
func RotateKey(ctx context.Context, st KeyStore, now time.Time, immediate bool) (store.LTIKey, error) {
	keys, err := st.LTIKeys(ctx)
	if err != nil {
		return store.LTIKey{}, err
	}
	if len(keys) > 0 && keys[0].SignsFrom.After(now) && !immediate {
		return store.LTIKey{}, fmt.Errorf("key %s, added at the last rotation, signs only from %s: rotate again after that, or now with --now", keys[0].ID, keys[0].SignsFrom.UTC().Format(time.RFC3339))
	}
	from := now.Add(KeyPublishDelay)
	if immediate || len(keys) == 0 {
		from = now
	}
	k, err := newKey(now, from)
	if err != nil {
		return store.LTIKey{}, err
	}
	return k, st.AddLTIKey(ctx, k, keysKept)
}

// ownKeys returns our keys, newest first, making the first one if there
// is none (the first request that needs a key does; a server that never
// sees an LTI request keeps none).
func (t *Tool) toolKeys(ctx context.Context) ([]*toolKey, error) {
	t.ownMu.Lock()
	defer t.ownMu.Unlock()
	stored, err := t.store.LTIKeys(ctx)
	if err == nil && len(stored) == 0 {
		if _, err = EnsureKey(ctx, t.store, t.now()); err == nil {
			t.log.InfoContext(ctx, "lti: made the tool's first signing key")
			stored, err = t.store.LTIKeys(ctx)
		}
	}
	if err != nil {
		return nil, err
	}
	out := make([]*toolKey, 0, len(stored))
	for _, s := range stored {
		k, ok := t.ownKeys[s.ID]
		if !ok {
			if k, err = parseToolKey(s); err != nil {
				return nil, fmt.Errorf("lti: key %s: %w", s.ID, err)
			}
			t.ownKeys[s.ID] = k
		}
		out = append(out, k)
	}
	return out, nil
}

func parseToolKey(s store.LTIKey) (*toolKey, error) {
	b, _ := pem.Decode([]byte(s.PrivatePEM))
	if b == nil {
		return nil, errors.New("not PEM")
	}
	raw, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		return nil, err
	}
	for _, kv := range []struct {
		k string
		v any
	}{{jwk.KeyIDKey, s.ID}, {jwk.AlgorithmKey, jwa.RS256()}, {jwk.KeyUsageKey, "sig"}} {
		if err := priv.Set(kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	pub, err := jwk.PublicKeyOf(priv)
	if err != nil {
		return nil, err
	}
	return &toolKey{id: s.ID, priv: priv, pub: pub, signsFrom: s.SignsFrom}, nil
}

// signingKey is the newest key whose time to sign has come.
func (t *Tool) signingKey(ctx context.Context) (*toolKey, error) {
	keys, err := t.toolKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := t.now()
	for _, k := range keys {
		if !k.signsFrom.After(now) {
			return k, nil
		}
	}
	return keys[len(keys)-1], nil // none is due yet (clocks moved back): the oldest
}

// JWKS is the tool's public keys as a JSON Web Key Set.
func (t *Tool) JWKS(ctx context.Context) ([]byte, error) {
	keys, err := t.toolKeys(ctx)
	if err != nil {
		return nil, err
	}
	set := jwk.NewSet()
	for _, k := range keys {
		if err := set.AddKey(k.pub); err != nil {
			return nil, err
		}
	}
	return json.Marshal(set)
}

// sign makes a compact JWS (RS256, typ JWT, our signing key's kid) of
// claims as JSON.
func (t *Tool) sign(ctx context.Context, claims any) (string, error) {
	k, err := t.signingKey(ctx)
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	h := jws.NewHeaders()
	if err := h.Set(jws.TypeKey, "JWT"); err != nil {
		return "", err
	}
	out, err := jws.Sign(payload, jws.WithKey(jwa.RS256(), k.priv, jws.WithProtectedHeaders(h)))
	return string(out), err
}
