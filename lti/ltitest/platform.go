// Package ltitest is a learning platform simulator for tests of the tool
// side of LTI 1.3: a real HTTP server on 127.0.0.1 with its own RSA keys
// and JWKS, an OIDC authorization endpoint that answers a login with a
// signed id_token (auto-posted by a form, as platforms do), an OAuth 2
// token endpoint that checks the tool's client assertion against the
// tool's JWKS, line items whose scores endpoint records what the tool
// posts, a deep linking return endpoint that verifies the tool's
// response, and a course page that frames a launch in an iframe.
//
// It is a test peer, not an LMS: it checks what a platform must check of
// the tool's messages and records them for the test to assert on.
package ltitest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"capacitylab/lti"
)

// Roles the simulator's users are given.
const (
	RoleLearner    = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
	RoleInstructor = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
)

// Key is one of the platform's signing keys.
type Key struct {
	ID   string
	priv jwk.Key
}

// NewKey makes an RSA key with a random kid (not published until added).
func NewKey(t testing.TB) *Key {
	t.Helper()
	raw, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	id := "sim-" + randomHex(6)
	if err := k.Set(jwk.KeyIDKey, id); err != nil {
		t.Fatal(err)
	}
	if err := k.Set(jwk.AlgorithmKey, jwa.RS256()); err != nil {
		t.Fatal(err)
	}
	return &Key{ID: id, priv: k}
}

// Launch is what the platform puts in one launch's id_token.
type Launch struct {
	User     string   // sub; "" is left out
	Name     string   // name claim
	Roles    []string // default: learner
	Context  string   // course id; default "course-1"
	Link     string   // resource link id; default "link-1"
	Target   string   // target_link_uri (an absolute URL on the tool)
	Graded   bool     // the link has a line item and the score scope
	DeepLink bool     // a deep linking request instead of a resource link
	// Multiple is the deep linking accept_multiple setting.
	Multiple bool
	// Tamper, if set, changes the claims before they are signed.
	Tamper func(claims map[string]any)
	// Key, if set, signs the token instead of the current key.
	Key *Key
}

// Score is a score the tool posted.
type Score struct {
	LineItem         string
	UserID           string  `json:"userId"`
	ScoreGiven       float64 `json:"scoreGiven"`
	ScoreMaximum     float64 `json:"scoreMaximum"`
	ActivityProgress string  `json:"activityProgress"`
	GradingProgress  string  `json:"gradingProgress"`
	Timestamp        string  `json:"timestamp"`
	Comment          string  `json:"comment"`
}

// Platform is a running simulator. Set ToolJWKS (and ToolLaunch) before
// the tool calls its token endpoint or a launch comes back.
type Platform struct {
	t          testing.TB
	srv        *httptest.Server
	URL        string // base URL, also the issuer
	ClientID   string
	Deployment string

	mu         sync.Mutex
	ToolJWKS   string            // the tool's JWKS URL
	ToolLaunch string            // the tool's launch (redirect) URL
	keys       []*Key            // published; the last one signs
	pending    map[string]Launch // by login_hint
	lineItems  map[string]string // line item id → resource link id
	tokens     map[string]time.Time
	tokenCount int
	scores     []Score
	failScores int // answer this many next score posts with 503
	items      [][]map[string]any
	lastNonce  string
	lastToken  string
	jwksHits   int
	TokenLife  time.Duration // expires_in of the tokens it issues; default 1h
	// Now is the platform's clock (default time.Now): the times it signs
	// and checks.
	Now func() time.Time
}

// Start starts a simulator on 127.0.0.1; it stops with the test.
func Start(t testing.TB) *Platform {
	t.Helper()
	p := &Platform{t: t, ClientID: "client-" + randomHex(4), Deployment: "dep-1", pending: map[string]Launch{},
		lineItems: map[string]string{}, tokens: map[string]time.Time{}, TokenLife: time.Hour, Now: time.Now}
	p.keys = []*Key{NewKey(t)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /auth", p.auth)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("GET /lineitems/{id}", p.lineItem)
	mux.HandleFunc("POST /lineitems/{id}/scores", p.score)
	mux.HandleFunc("POST /deep-link-return", p.deepLinkReturn)
	mux.HandleFunc("GET /course", p.course)
	p.srv = httptest.NewServer(mux)
	p.URL = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

// Registration is the platform as the tool registers it.
func (p *Platform) Registration() lti.Platform {
	return lti.Platform{Name: "Simulated LMS", Issuer: p.URL, ClientID: p.ClientID, Deployments: []string{p.Deployment},
		AuthURL: p.URL + "/auth", TokenURL: p.URL + "/token", JWKSURL: p.URL + "/jwks"}
}

// Rotate adds a new signing key; the old ones stay published unless drop.
func (p *Platform) Rotate(drop bool) *Key {
	k := NewKey(p.t)
	p.mu.Lock()
	defer p.mu.Unlock()
	if drop {
		p.keys = nil
	}
	p.keys = append(p.keys, k)
	return k
}

// Impostor is a new key that claims the current key's kid: what it signs
// does not verify.
func (p *Platform) Impostor() *Key {
	k := NewKey(p.t)
	p.mu.Lock()
	k.ID = p.keys[len(p.keys)-1].ID
	p.mu.Unlock()
	if err := k.priv.Set(jwk.KeyIDKey, k.ID); err != nil {
		p.t.Fatal(err)
	}
	return k
}

// JWKSFetches is how many times the platform's JWKS was fetched.
func (p *Platform) JWKSFetches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.jwksHits
}

// FailScores makes the next n score posts answer 503.
func (p *Platform) FailScores(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failScores = n
}

// Scores returns the scores posted so far.
func (p *Platform) Scores() []Score {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Score(nil), p.scores...)
}

// WaitScores waits until at least n scores were posted, or fails.
func (p *Platform) WaitScores(n int, within time.Duration) []Score {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := p.Scores()
		if len(s) >= n {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%d scores posted within %s, want %d: %+v", len(s), within, n, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TokensIssued is how many access tokens the token endpoint issued.
func (p *Platform) TokensIssued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokenCount
}

// DeepLinkItems returns the content items of each verified deep linking
// response, in order.
func (p *Platform) DeepLinkItems() [][]map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]map[string]any(nil), p.items...)
}

// LastIDToken is the id_token of the last launch, as it was posted.
func (p *Platform) LastIDToken() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastToken
}

// Expect registers a launch under a new login_hint and returns the hint.
func (p *Platform) Expect(l Launch) string {
	hint := "hint-" + randomHex(8)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending[hint] = l
	return hint
}

// LoginURL is the tool's login initiation for a launch, as a platform
// sends the browser to it.
func (p *Platform) LoginURL(toolLogin string, l Launch) string {
	q := url.Values{"iss": {p.URL}, "login_hint": {p.Expect(l)}, "target_link_uri": {l.Target},
		"lti_message_hint": {"msg-" + randomHex(4)}, "client_id": {p.ClientID}, "lti_deployment_id": {p.Deployment}}
	return toolLogin + "?" + q.Encode()
}

// CourseURL is a course page that frames the launch in an iframe.
func (p *Platform) CourseURL(toolLogin string, l Launch) string {
	return p.URL + "/course?" + url.Values{"login": {p.LoginURL(toolLogin, l)}}.Encode()
}

func (p *Platform) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.jwksHits++
	keys := append([]*Key(nil), p.keys...)
	p.mu.Unlock()
	set := jwk.NewSet()
	for _, k := range keys {
		pub, err := jwk.PublicKeyOf(k.priv)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		set.AddKey(pub)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(set)
}

// auth is the OIDC authorization endpoint: it checks the authentication
// request and answers with a page that posts the id_token to the tool.
func (p *Platform) auth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k, want := range map[string]string{"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
		"prompt": "none", "client_id": p.ClientID} {
		if q.Get(k) != want {
			http.Error(w, fmt.Sprintf("auth: %s is %q, want %q", k, q.Get(k), want), http.StatusBadRequest)
			return
		}
	}
	p.mu.Lock()
	l, ok := p.pending[q.Get("login_hint")]
	launchURL := p.ToolLaunch
	p.mu.Unlock()
	if !ok {
		http.Error(w, "auth: unknown login_hint", http.StatusBadRequest)
		return
	}
	if launchURL != "" && q.Get("redirect_uri") != launchURL {
		http.Error(w, fmt.Sprintf("auth: redirect_uri %q is not the registered %q", q.Get("redirect_uri"), launchURL), http.StatusBadRequest)
		return
	}
	if q.Get("nonce") == "" || q.Get("state") == "" {
		http.Error(w, "auth: no nonce or state", http.StatusBadRequest)
		return
	}
	tok := p.IDToken(l, q.Get("nonce"))
	p.mu.Lock()
	p.lastNonce, p.lastToken = q.Get("nonce"), tok
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!DOCTYPE html><html lang="en"><head><title>Signing you in</title></head><body>
<form id="f" method="post" action="%s"><input type="hidden" name="id_token" value="%s"><input type="hidden" name="state" value="%s"><button>Continue</button></form>
<script>document.getElementById("f").submit()</script></body></html>`,
		html.EscapeString(q.Get("redirect_uri")), html.EscapeString(tok), html.EscapeString(q.Get("state")))
}

// Claims are the claims the platform would sign for l with nonce.
func (p *Platform) Claims(l Launch, nonce string) map[string]any {
	now := p.Now()
	roles := l.Roles
	if roles == nil {
		roles = []string{RoleLearner}
	}
	c := map[string]any{
		"iss": p.URL, "aud": p.ClientID, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "nonce": nonce,
		"https://purl.imsglobal.org/spec/lti/claim/version":       "1.3.0",
		"https://purl.imsglobal.org/spec/lti/claim/deployment_id": p.Deployment,
		"https://purl.imsglobal.org/spec/lti/claim/roles":         roles,
		"https://purl.imsglobal.org/spec/lti/claim/context":       map[string]any{"id": cmpOr(l.Context, "course-1"), "title": "Capacity 101"},
		"https://purl.imsglobal.org/spec/lti/claim/tool_platform": map[string]any{"name": "Simulated LMS", "guid": p.URL},
	}
	if l.User != "" {
		c["sub"] = l.User
	}
	if l.Name != "" {
		c["name"] = l.Name
	}
	link := cmpOr(l.Link, "link-1")
	if l.DeepLink {
		c["https://purl.imsglobal.org/spec/lti/claim/message_type"] = "LtiDeepLinkingRequest"
		c["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = map[string]any{
			"deep_link_return_url": p.URL + "/deep-link-return", "accept_types": []string{"ltiResourceLink"},
			"accept_presentation_document_targets": []string{"iframe", "window"}, "accept_multiple": l.Multiple,
			"data": "opaque-" + link,
		}
		if l.Target != "" {
			c["https://purl.imsglobal.org/spec/lti/claim/target_link_uri"] = l.Target
		}
	} else {
		c["https://purl.imsglobal.org/spec/lti/claim/message_type"] = "LtiResourceLinkRequest"
		c["https://purl.imsglobal.org/spec/lti/claim/target_link_uri"] = l.Target
		c["https://purl.imsglobal.org/spec/lti/claim/resource_link"] = map[string]any{"id": link, "title": "Placed " + link}
	}
	if l.Graded {
		id := "li-" + link
		p.mu.Lock()
		p.lineItems[id] = link
		p.mu.Unlock()
		c["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = map[string]any{
			"scope":     []string{"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem", "https://purl.imsglobal.org/spec/lti-ags/scope/score"},
			"lineitems": p.URL + "/lineitems", "lineitem": p.URL + "/lineitems/" + id,
		}
	}
	if l.Tamper != nil {
		l.Tamper(c)
	}
	return c
}

// IDToken signs l's claims with nonce.
func (p *Platform) IDToken(l Launch, nonce string) string {
	return p.Sign(p.Claims(l, nonce), l.Key)
}

// Sign signs claims with k (nil: the current key).
func (p *Platform) Sign(claims map[string]any, k *Key) string {
	if k == nil {
		p.mu.Lock()
		k = p.keys[len(p.keys)-1]
		p.mu.Unlock()
	}
	b, err := json.Marshal(claims)
	if err != nil {
		p.t.Fatal(err)
	}
	h := jws.NewHeaders()
	h.Set(jws.TypeKey, "JWT")
	out, err := jws.Sign(b, jws.WithKey(jwa.RS256(), k.priv, jws.WithProtectedHeaders(h)))
	if err != nil {
		p.t.Fatal(err)
	}
	return string(out)
}

// toolClaims verifies a JWT the tool signed against the tool's JWKS
// (fetched each time, so a rotation shows at once).
func (p *Platform) toolClaims(raw string) (jwt.Token, error) {
	p.mu.Lock()
	jwksURL := p.ToolJWKS
	p.mu.Unlock()
	if jwksURL == "" {
		return nil, fmt.Errorf("the simulator does not know the tool's JWKS URL")
	}
	set, err := jwk.Fetch(p.t.Context(), jwksURL)
	if err != nil {
		return nil, fmt.Errorf("fetching the tool's keys: %w", err)
	}
	return jwt.Parse([]byte(raw), jwt.WithKeySet(set), jwt.WithAcceptableSkew(time.Minute), jwt.WithClock(jwt.ClockFunc(p.Now)))
}

// token is the OAuth 2 token endpoint (client credentials with a JWT
// client assertion).
func (p *Platform) token(w http.ResponseWriter, r *http.Request) {
	if r.FormValue("grant_type") != "client_credentials" ||
		r.FormValue("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		oauthError(w, "unsupported_grant_type", "want client_credentials with a jwt-bearer client assertion")
		return
	}
	tok, err := p.toolClaims(r.FormValue("client_assertion"))
	if err != nil {
		oauthError(w, "invalid_client", err.Error())
		return
	}
	iss, _ := tok.Issuer()
	sub, _ := tok.Subject()
	aud, _ := tok.Audience()
	jti, _ := tok.JwtID()
	if iss != p.ClientID || sub != p.ClientID || len(aud) != 1 || aud[0] != p.URL+"/token" || jti == "" {
		oauthError(w, "invalid_client", fmt.Sprintf("assertion iss %q sub %q aud %q jti %q", iss, sub, aud, jti))
		return
	}
	if !strings.Contains(r.FormValue("scope"), "https://purl.imsglobal.org/spec/lti-ags/scope/score") {
		oauthError(w, "invalid_scope", "want the score scope")
		return
	}
	access := "at-" + randomHex(16)
	p.mu.Lock()
	p.tokens[access] = p.Now().Add(p.TokenLife)
	p.tokenCount++
	life := p.TokenLife
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(life.Seconds()),
		"scope": r.FormValue("scope")})
}

func oauthError(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// authorized checks a request's bearer token.
func (p *Platform) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	defer p.mu.Unlock()
	exp, known := p.tokens[tok]
	return ok && known && p.Now().Before(exp)
}

func (p *Platform) lineItem(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	link, ok := p.lineItems[r.PathValue("id")]
	p.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.ims.lis.v2.lineitem+json")
	json.NewEncoder(w).Encode(map[string]any{"id": p.URL + "/lineitems/" + r.PathValue("id"), "scoreMaximum": 100,
		"label": "Placed " + link, "resourceLinkId": link})
}

// score is a line item's scores endpoint.
func (p *Platform) score(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(r) {
		http.Error(w, "no valid bearer token", http.StatusUnauthorized)
		return
	}
	if r.Header.Get("Content-Type") != "application/vnd.ims.lis.v1.score+json" {
		http.Error(w, "want Content-Type application/vnd.ims.lis.v1.score+json", http.StatusUnsupportedMediaType)
		return
	}
	p.mu.Lock()
	_, known := p.lineItems[r.PathValue("id")]
	fail := p.failScores > 0
	if fail {
		p.failScores--
	}
	p.mu.Unlock()
	if !known {
		http.NotFound(w, r)
		return
	}
	if fail {
		http.Error(w, "the gradebook is down for maintenance", http.StatusServiceUnavailable)
		return
	}
	var s Score
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &s); err != nil || s.UserID == "" || s.Timestamp == "" || s.ActivityProgress == "" || s.GradingProgress == "" {
		http.Error(w, "not a score: "+string(body), http.StatusBadRequest)
		return
	}
	if _, err := time.Parse(time.RFC3339, s.Timestamp); err != nil {
		http.Error(w, "timestamp is not ISO 8601: "+s.Timestamp, http.StatusBadRequest)
		return
	}
	s.LineItem = p.URL + "/lineitems/" + r.PathValue("id")
	p.mu.Lock()
	p.scores = append(p.scores, s)
	p.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// deepLinkReturn verifies the tool's deep linking response and keeps its
// items.
func (p *Platform) deepLinkReturn(w http.ResponseWriter, r *http.Request) {
	tok, err := p.toolClaims(r.FormValue("JWT"))
	if err != nil {
		http.Error(w, "deep linking response does not verify: "+err.Error(), http.StatusBadRequest)
		return
	}
	iss, _ := tok.Issuer()
	aud, _ := tok.Audience()
	var mt, dep, data string
	var items []map[string]any
	tok.Get("https://purl.imsglobal.org/spec/lti/claim/message_type", &mt)
	tok.Get("https://purl.imsglobal.org/spec/lti/claim/deployment_id", &dep)
	tok.Get("https://purl.imsglobal.org/spec/lti-dl/claim/data", &data)
	var raw any
	tok.Get("https://purl.imsglobal.org/spec/lti-dl/claim/content_items", &raw)
	b, _ := json.Marshal(raw)
	json.Unmarshal(b, &items)
	if iss != p.ClientID || len(aud) != 1 || aud[0] != p.URL || mt != "LtiDeepLinkingResponse" || dep != p.Deployment || !strings.HasPrefix(data, "opaque-") {
		http.Error(w, fmt.Sprintf("bad deep linking response: iss %q aud %q type %q deployment %q data %q", iss, aud, mt, dep, data), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.items = append(p.items, items)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!DOCTYPE html><html lang="en"><head><title>Added</title></head><body><p id="added">Added %d item(s)</p></body></html>`, len(items))
}

// course is a course page framing the login URL given in ?login=.
func (p *Platform) course(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!DOCTYPE html><html lang="en"><head><title>Capacity 101</title></head><body><h1>Capacity 101</h1>
<iframe id="tool" title="Capacity Lab" width="1000" height="700" src="%s"></iframe></body></html>`, html.EscapeString(r.URL.Query().Get("login")))
}

// LaunchForm reads the auto-posting form of an authorization answer: its
// action and fields.
func LaunchForm(page string) (string, url.Values, error) {
	m := regexp.MustCompile(`<form id="f" method="post" action="([^"]*)">`).FindStringSubmatch(page)
	if m == nil {
		return "", nil, fmt.Errorf("no launch form in %.300q", page)
	}
	v := url.Values{}
	for _, f := range regexp.MustCompile(`name="([^"]+)" value="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		v.Set(html.UnescapeString(f[1]), html.UnescapeString(f[2]))
	}
	return html.UnescapeString(m[1]), v, nil
}

// Do runs a launch as a browser would, with client (which must not follow
// redirects, and keeps cookies): the tool's login initiation, the
// platform's authorization answer, and the form it posts to the tool. It
// returns the tool's answer to the post, or the first answer that was not
// the next step (a refused login). The caller closes the body.
func (p *Platform) Do(c *http.Client, toolLogin string, l Launch) *http.Response {
	p.t.Helper()
	res, err := c.Get(p.LoginURL(toolLogin, l))
	if err != nil {
		p.t.Fatal(err)
	}
	if res.StatusCode != http.StatusFound {
		return res
	}
	res.Body.Close()
	res, err = c.Get(res.Header.Get("Location"))
	if err != nil {
		p.t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		p.t.Fatalf("the simulator's auth endpoint answered %d: %s", res.StatusCode, page)
	}
	action, form, err := LaunchForm(string(page))
	if err != nil {
		p.t.Fatal(err)
	}
	res, err = c.PostForm(action, form)
	if err != nil {
		p.t.Fatal(err)
	}
	return res
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
