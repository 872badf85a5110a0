package lti

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// Platform key cache.
const (
	// keysTTL is how long a platform's key set is used before it is
	// fetched again even if every kid is found in it.
	keysTTL = time.Hour
	// maxJWKSBytes caps a platform's key set.
	maxJWKSBytes = 1 << 20
)

// keyCache keeps each platform's key set (by JWKS URL). A token signed
// with a kid the kept set lacks makes it fetch the set again, at most once
// per refetch, so a platform's rotation is picked up at the first token
// its new key signs, and tokens with made-up kids cannot make us hammer
// the platform.
type keyCache struct {
	hc      *http.Client
	now     func() time.Time
	refetch time.Duration

	mu   sync.Mutex
	sets map[string]*keySet
}

type keySet struct {
	mu      sync.Mutex // one fetch at a time per URL
	set     jwk.Set
	fetched time.Time
}

func (c *keyCache) entry(url string) *keySet {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sets == nil {
		c.sets = map[string]*keySet{}
	}
	e, ok := c.sets[url]
	if !ok {
		e = &keySet{}
		c.sets[url] = e
	}
	return e
}

// key returns the platform's RSA signing key with this kid.
func (c *keyCache) key(ctx context.Context, url, kid string) (jwk.Key, error) {
	e := c.entry(url)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.now()
	fetched := false
	if e.set == nil || now.Sub(e.fetched) >= keysTTL {
		if err := c.fetch(ctx, url, e); err != nil {
			return nil, err
		}
		fetched = true
	}
	if k, ok := e.set.LookupKeyID(kid); ok {
		return checkKey(k, kid)
	}
	if !fetched && now.Sub(e.fetched) >= c.refetch {
		if err := c.fetch(ctx, url, e); err != nil {
			return nil, err
		}
		fetched = true
		if k, ok := e.set.LookupKeyID(kid); ok {
			return checkKey(k, kid)
		}
	}
	how := "fetched again just now"
	if !fetched {
		how = fmt.Sprintf("fetched %s ago, less than %s, so not again", now.Sub(e.fetched).Round(time.Millisecond), c.refetch)
	}
	return nil, refuse(ReasonUnknownKid, "The platform signed this launch with a key it does not publish. Its administrator should check the platform's key set (JWKS) URL registered with the tool.",
		fmt.Sprintf("kid %q is not among the %d keys at %s (%s)", kid, e.set.Len(), url, how))
}

func checkKey(k jwk.Key, kid string) (jwk.Key, error) {
	if k.KeyType() != jwa.RSA() {
		return nil, refuse(ReasonAlgorithm, "The platform signed this launch with a key that is not an RSA key; LTI 1.3 uses RS256.",
			fmt.Sprintf("kid %q is a %s key", kid, k.KeyType()))
	}
	if use, ok := k.KeyUsage(); ok && use != "sig" {
		return nil, refuse(ReasonSignature, "The platform's key for this launch is not a signing key.", fmt.Sprintf("kid %q has use %q", kid, use))
	}
	return k, nil
}

func (c *keyCache) fetch(ctx context.Context, url string, e *keySet) error {
	unavailable := func(detail string) error {
		return refuse(ReasonKeys, "The tool could not fetch the platform's public keys to check this launch. Try again in a minute; if it keeps happening, the platform's administrator should check its key set (JWKS) URL.", detail)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return unavailable(err.Error())
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.hc.Do(req)
	if err != nil {
		return unavailable(fmt.Sprintf("GET %s: %v", url, err))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSBytes))
	if err != nil {
		return unavailable(fmt.Sprintf("GET %s: %v", url, err))
	}
	if res.StatusCode != http.StatusOK {
		return unavailable(fmt.Sprintf("GET %s: status %d", url, res.StatusCode))
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return unavailable(fmt.Sprintf("GET %s: not a JWK set: %v", url, err))
	}
	e.set, e.fetched = set, c.now()
	return nil
}
