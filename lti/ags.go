package lti

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"capacitylab/store"
)

// Assignment and Grade Services.
const (
	// scoreType is the media type of a score (AGS 2.0 §3.4).
	scoreType = "application/vnd.ims.lis.v1.score+json"
	// assertionType is how the client assertion is sent (RFC 7523).
	assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// tokenMargin is how long before its expiry a token is no longer used.
	tokenMargin = time.Minute
	// defaultTokenLife is assumed when a token answer gives no expires_in.
	defaultTokenLife = 5 * time.Minute
	// maxAnswerBytes caps what is read of a platform's answer.
	maxAnswerBytes = 64 << 10
)

// tokenCache keeps access tokens by platform and scope until shortly
// before they expire.
type tokenCache struct {
	mu sync.Mutex
	m  map[string]accessToken
}

type accessToken struct {
	value   string
	expires time.Time
}

func tokenKey(p Platform, scope string) string { return p.Issuer + " " + p.ClientID + " " + scope }

// accessToken returns a token for scope at the platform: a kept one, or a
// new one got with the client credentials grant, the tool authenticating
// with a JWT signed by its key (RFC 7523 client assertion).
func (t *Tool) accessToken(ctx context.Context, p Platform, scope string) (string, error) {
	key, now := tokenKey(p, scope), t.now()
	t.tokens.mu.Lock()
	tok, ok := t.tokens.m[key]
	t.tokens.mu.Unlock()
	if ok && now.Before(tok.expires) {
		return tok.value, nil
	}
	aud := cmpOr(p.TokenAudience, p.TokenURL)
	assertion, err := t.sign(ctx, map[string]any{"iss": p.ClientID, "sub": p.ClientID, "aud": aud,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": randomHex(16)})
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {assertionType},
		"client_assertion": {assertion}, "scope": {scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	body, status, err := t.call(req)
	if err != nil {
		return "", fmt.Errorf("token request to %s: %w", p.TokenURL, err)
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("token request to %s: status %d: %s", p.TokenURL, status, snippet(body))
	}
	var ans struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &ans); err != nil || ans.AccessToken == "" {
		return "", fmt.Errorf("token request to %s: no access_token in the answer: %s", p.TokenURL, snippet(body))
	}
	if !strings.EqualFold(ans.TokenType, "bearer") {
		return "", fmt.Errorf("token request to %s: token_type %q, want Bearer", p.TokenURL, ans.TokenType)
	}
	life := time.Duration(ans.ExpiresIn) * time.Second
	if life <= 0 {
		life = defaultTokenLife
	}
	expires := now.Add(life - min(tokenMargin, life/10))
	t.tokens.mu.Lock()
	if t.tokens.m == nil {
		t.tokens.m = map[string]accessToken{}
	}
	t.tokens.m[key] = accessToken{value: ans.AccessToken, expires: expires}
	t.tokens.mu.Unlock()
	return ans.AccessToken, nil
}

func (t *Tool) forgetToken(p Platform, scope string) {
	t.tokens.mu.Lock()
	defer t.tokens.mu.Unlock()
	delete(t.tokens.m, tokenKey(p, scope))
}

// call does a request and reads (some of) the answer.
func (t *Tool) call(req *http.Request) ([]byte, int, error) {
	res, err := t.hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes))
	return body, res.StatusCode, err
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// scoresURL is a line item's scores endpoint: its path with /scores.
func scoresURL(lineitem string) (string, error) {
	u, err := url.Parse(lineitem)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("line item %q is not an absolute URL", lineitem)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/scores"
	u.RawPath = ""
	return u.String(), nil
}

// scoreBody is a score as AGS posts it.
type scoreBody struct {
	UserID           string  `json:"userId"`
	ScoreGiven       float64 `json:"scoreGiven"`
	ScoreMaximum     float64 `json:"scoreMaximum"`
	ActivityProgress string  `json:"activityProgress"`
	GradingProgress  string  `json:"gradingProgress"`
	Timestamp        string  `json:"timestamp"`
	Comment          string  `json:"comment,omitempty"`
}

// postScore posts s as g's score to its line item. A 401 drops the kept
// token and tries once more with a new one.
func (t *Tool) postScore(ctx context.Context, p Platform, g store.LTIGrade, s Score) error {
	u, err := scoresURL(g.LineItem)
	if err != nil {
		return err
	}
	progress := "InProgress"
	if s.Completed {
		progress = "Completed"
	}
	body, err := json.Marshal(scoreBody{UserID: g.Subject, ScoreGiven: s.Given, ScoreMaximum: s.Max, ActivityProgress: progress,
		GradingProgress: "FullyGraded", Timestamp: t.now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), Comment: s.Comment})
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		tok, err := t.accessToken(ctx, p, ScopeScore)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", scoreType)
		req.Header.Set("Authorization", "Bearer "+tok)
		ans, status, err := t.call(req)
		switch {
		case err != nil:
			return fmt.Errorf("POST %s: %w", u, err)
		case status == http.StatusUnauthorized && try == 0:
			t.forgetToken(p, ScopeScore)
			continue
		case status < 200 || status > 299:
			return fmt.Errorf("POST %s: status %d: %s", u, status, snippet(ans))
		}
		return nil
	}
}
