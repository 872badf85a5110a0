package lti

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"capacitylab/store"
)

// Message types and the LTI version this tool takes.
const (
	MessageResourceLink = "LtiResourceLinkRequest"
	MessageDeepLinking  = "LtiDeepLinkingRequest"
	Version             = "1.3.0"
	// clockSkew is how far the platform's clock may be from ours when exp
	// and iat are checked.
	clockSkew = time.Minute
)

// Claim names (LTI 1.3 Core, Deep Linking 2.0, Assignment and Grade
// Services 2.0).
const (
	claimMessageType  = "https://purl.imsglobal.org/spec/lti/claim/message_type"
	claimVersion      = "https://purl.imsglobal.org/spec/lti/claim/version"
	claimDeployment   = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
	claimTarget       = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"
	claimResourceLink = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
	claimRoles        = "https://purl.imsglobal.org/spec/lti/claim/roles"
	claimContext      = "https://purl.imsglobal.org/spec/lti/claim/context"
	claimPresentation = "https://purl.imsglobal.org/spec/lti/claim/launch_presentation"
	claimCustom       = "https://purl.imsglobal.org/spec/lti/claim/custom"
	claimAGS          = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
	claimDLSettings   = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
	claimDLItems      = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
	claimDLData       = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
	claimDLMsg        = "https://purl.imsglobal.org/spec/lti-dl/claim/msg"
	// ScopeScore is the AGS scope to post scores.
	ScopeScore = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
)

// claims is an id_token's payload as far as the tool reads it.
type claims struct {
	Nonce         string          `json:"nonce"`
	Azp           string          `json:"azp"`
	Sub           string          `json:"sub"`
	Name          string          `json:"name"`
	GivenName     string          `json:"given_name"`
	FamilyName    string          `json:"family_name"`
	MessageType   string          `json:"https://purl.imsglobal.org/spec/lti/claim/message_type"`
	Version       string          `json:"https://purl.imsglobal.org/spec/lti/claim/version"`
	DeploymentID  string          `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
	TargetLinkURI string          `json:"https://purl.imsglobal.org/spec/lti/claim/target_link_uri"`
	ResourceLink  *idTitle        `json:"https://purl.imsglobal.org/spec/lti/claim/resource_link"`
	Roles         *[]string       `json:"https://purl.imsglobal.org/spec/lti/claim/roles"`
	Context       *idTitle        `json:"https://purl.imsglobal.org/spec/lti/claim/context"`
	Presentation  *presentation   `json:"https://purl.imsglobal.org/spec/lti/claim/launch_presentation"`
	Custom        map[string]any  `json:"https://purl.imsglobal.org/spec/lti/claim/custom"`
	AGS           *agsEndpoint    `json:"https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"`
	DeepLinking   *DeepLinkingSet `json:"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"`
}

type idTitle struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Label string `json:"label"`
}

type presentation struct {
	DocumentTarget string `json:"document_target"`
	ReturnURL      string `json:"return_url"`
}

type agsEndpoint struct {
	Scope     []string `json:"scope"`
	LineItems string   `json:"lineitems"`
	LineItem  string   `json:"lineitem"`
}

// DeepLinkingSet is a deep linking request's settings claim.
type DeepLinkingSet struct {
	ReturnURL   string   `json:"deep_link_return_url"`
	AcceptTypes []string `json:"accept_types"`
	Targets     []string `json:"accept_presentation_document_targets"`
	Multiple    *bool    `json:"accept_multiple"`
	AutoCreate  bool     `json:"auto_create"`
	Title       string   `json:"title"`
	Text        string   `json:"text"`
	Data        string   `json:"data"`
	LineItemOK  *bool    `json:"accept_lineitem"`
	MediaTypes  string   `json:"accept_media_types"`
}

// Launch is a validated launch: who, from where, to what.
type Launch struct {
	Platform      Platform
	MessageType   string // MessageResourceLink or MessageDeepLinking
	Deployment    string
	Subject       string // the platform's user id
	Name          string // the name claim ("" when the platform sends none)
	Roles         []string
	ContextID     string // the course
	ContextTitle  string
	ResourceLink  string // the placement's id (resource link launches)
	LinkTitle     string
	TargetLinkURI string
	ReturnURL     string            // launch_presentation.return_url, if any
	Custom        map[string]string // custom parameters
	// LineItem is the AGS line item of the placement, when the platform
	// takes scores for it (the score scope granted); "" otherwise.
	LineItem    string
	DeepLinking *DeepLinkingSet // deep linking requests only
}

// Instructor reports whether the launch's roles make the user an
// instructor (see IsInstructor).
func (l *Launch) Instructor() bool { return IsInstructor(l.Roles) }

// Launch validates a launch: the form the platform's authorization
// endpoint posted (id_token and state), against the login that issued the
// state, the platform's keys and the claims LTI 1.3 requires. base is
// this tool's origin (scheme://host), which target_link_uri must name. A
// *Refusal says why a launch is refused.
func (t *Tool) Launch(ctx context.Context, r *http.Request, base string) (*Launch, error) {
	if e := r.PostFormValue("error"); e != "" {
		return nil, refuse(ReasonPlatformErr, "The platform did not let this launch through ("+e+"). Try the link again from the course; if it keeps happening, tell the course's administrator.",
			fmt.Sprintf("authentication error %q: %q", e, r.PostFormValue("error_description")))
	}
	raw, state := r.PostFormValue("id_token"), r.PostFormValue("state")
	if state == "" {
		return nil, noLogin("the form has no state")
	}
	login, err := t.store.LTILogin(ctx, hashOf(state))
	if errors.Is(err, store.ErrNoLTILogin) {
		return nil, noLogin("no login issued this state")
	}
	if err != nil {
		return nil, err
	}
	now := t.now()
	if !login.UsedAt.IsZero() {
		return nil, replayed(fmt.Sprintf("the state's login was used at %s", login.UsedAt.UTC().Format(time.RFC3339)))
	}
	if now.After(login.ExpiresAt) {
		return nil, refuse(ReasonLoginExpire, "This launch took too long to come back from the platform. Open the link in the course again.",
			fmt.Sprintf("login of %s expired at %s", login.CreatedAt.UTC().Format(time.RFC3339), login.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	if !hasStateCookie(r, state) {
		return nil, refuse(ReasonStateCookie, "Your browser did not send back the cookie this tool set when the launch began, so the launch cannot be tied to you. The tool must be served over HTTPS, and the browser must allow this site's cookies in the course page (partitioned cookies); or open the link in a new window.",
			"no state cookie "+stateCookiePrefix+state[:min(12, len(state))])
	}
	if raw == "" {
		return nil, refuse(ReasonClaims, "The platform sent no id_token with this launch.", "the form has no id_token")
	}
	p, err := t.platform(ctx, login.Issuer, login.ClientID)
	if err != nil {
		return nil, err
	}
	payload, err := t.verify(ctx, p, raw)
	if err != nil {
		return nil, err
	}
	l, err := t.checkClaims(p, payload, login, base, now)
	if err != nil {
		return nil, err
	}
	ok, err := t.store.UseLTILogin(ctx, login.StateHash, now)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, replayed("another launch used the state's login first")
	}
	return l, nil
}

func noLogin(detail string) *Refusal {
	return refuse(ReasonNoLogin, "This launch did not begin at the tool's login step, or came back from it over 10 minutes later, so it cannot be trusted. Open the link from the course page; the platform's administrator should check that the tool's login URL is set.", detail)
}

func replayed(detail string) *Refusal {
	return refuse(ReasonReplay, "This launch was already used once; a launch may be used only once. Open the link in the course again.", detail)
}

// verify checks the token's one RS256 signature with the platform's key
// of its kid and returns the payload.
func (t *Tool) verify(ctx context.Context, p Platform, raw string) ([]byte, error) {
	msg, err := jws.Parse([]byte(raw))
	if err != nil || len(msg.Signatures()) != 1 {
		return nil, refuse(ReasonMalformed, "The platform's id_token is not a signed JSON Web Token.", fmt.Sprintf("not a compact JWS with one signature: %v", err))
	}
	h := msg.Signatures()[0].ProtectedHeaders()
	if alg, ok := h.Algorithm(); !ok || alg != jwa.RS256() {
		return nil, refuse(ReasonAlgorithm, "The platform signed this launch with another algorithm than RS256, which LTI 1.3 requires.", fmt.Sprintf("alg %v", alg))
	}
	kid, ok := h.KeyID()
	if !ok || kid == "" {
		return nil, refuse(ReasonUnknownKid, "The platform's id_token does not say which of its keys signed it (kid), which LTI 1.3 requires.", "no kid in the JWS header")
	}
	key, err := t.keys.key(ctx, p.JWKSURL, kid)
	if err != nil {
		return nil, err
	}
	payload, err := jws.Verify([]byte(raw), jws.WithKey(jwa.RS256(), key))
	if err != nil {
		return nil, refuse(ReasonSignature, "The launch's signature does not match the platform's key, so it may have been altered or forged.", fmt.Sprintf("kid %q: %v", kid, err))
	}
	return payload, nil
}

// checkClaims validates the payload's claims and makes the Launch.
func (t *Tool) checkClaims(p Platform, payload []byte, login store.LTILogin, base string, now time.Time) (*Launch, error) {
	tok, err := jwt.Parse(payload, jwt.WithVerify(false), jwt.WithValidate(false))
	var c claims
	if err == nil {
		err = json.Unmarshal(payload, &c)
	}
	if err != nil {
		return nil, refuse(ReasonMalformed, "The platform's id_token does not hold the claims of an LTI launch.", err.Error())
	}
	var missing []string
	for _, name := range []string{"iss", "aud", "exp", "iat"} {
		if !tok.Has(name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, missingClaims(missing)
	}
	err = jwt.Validate(tok, jwt.WithClock(jwt.ClockFunc(func() time.Time { return now })), jwt.WithAcceptableSkew(clockSkew),
		jwt.WithIssuer(p.Issuer), jwt.WithAudience(p.ClientID))
	iss, _ := tok.Issuer()
	aud, _ := tok.Audience()
	exp, _ := tok.Expiration()
	switch {
	case err == nil:
	case errors.Is(err, jwt.TokenExpiredError()):
		return nil, refuse(ReasonExpired, "This launch has expired: it was signed to be used within minutes. Open the link in the course again; if it keeps happening, the platform's clock or ours may be wrong.",
			fmt.Sprintf("exp %s is before now %s (skew allowed %s)", exp.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), clockSkew))
	case errors.Is(err, jwt.InvalidIssuedAtError()), errors.Is(err, jwt.TokenNotYetValidError()):
		return nil, refuse(ReasonExpired, "This launch says it was issued in the future: the platform's clock or ours is wrong.", err.Error())
	case errors.Is(err, jwt.InvalidIssuerError()):
		return nil, refuse(ReasonIssuer, "This launch was issued by another platform than the one its login began with.",
			fmt.Sprintf("iss %q, want %q", iss, p.Issuer))
	case errors.Is(err, jwt.InvalidAudienceError()):
		return nil, audience(fmt.Sprintf("aud %q does not hold client id %q", aud, p.ClientID))
	default:
		return nil, refuse(ReasonMalformed, "The platform's id_token does not hold valid claims.", err.Error())
	}
	if len(aud) > 1 && c.Azp == "" {
		return nil, audience(fmt.Sprintf("aud %q has several audiences and no azp", aud))
	}
	if c.Azp != "" && c.Azp != p.ClientID {
		return nil, audience(fmt.Sprintf("azp %q is not client id %q", c.Azp, p.ClientID))
	}
	if c.Nonce == "" {
		return nil, missingClaims([]string{"nonce"})
	}
	if c.Nonce != login.Nonce {
		return nil, refuse(ReasonNonce, "This launch's token was made for another login than this one (its nonce differs): it may be a replay of an earlier launch. Open the link in the course again.",
			"nonce is not the one this state's login issued")
	}
	for _, f := range []struct{ name, v string }{
		{"sub", c.Sub}, {claimMessageType, c.MessageType}, {claimVersion, c.Version}, {claimDeployment, c.DeploymentID},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if c.Roles == nil {
		missing = append(missing, claimRoles)
	}
	switch c.MessageType {
	case MessageResourceLink:
		if c.ResourceLink == nil || c.ResourceLink.ID == "" {
			missing = append(missing, claimResourceLink+" id")
		}
		if c.TargetLinkURI == "" {
			missing = append(missing, claimTarget)
		}
	case MessageDeepLinking:
		if c.DeepLinking == nil || c.DeepLinking.ReturnURL == "" {
			missing = append(missing, claimDLSettings+" deep_link_return_url")
		}
	}
	if len(missing) > 0 {
		return nil, missingClaims(missing)
	}
	if c.Version != Version {
		return nil, refuse(ReasonVersion, fmt.Sprintf("This launch is LTI version %q; this tool takes LTI %s.", c.Version, Version), "version "+c.Version)
	}
	if c.MessageType != MessageResourceLink && c.MessageType != MessageDeepLinking {
		return nil, refuse(ReasonMessage, fmt.Sprintf("This tool does not take %q launches; it takes resource links and deep linking.", c.MessageType), "message type "+c.MessageType)
	}
	if !slices.Contains(p.Deployments, c.DeploymentID) {
		return nil, deploymentRefusal(p, c.DeploymentID)
	}
	if c.TargetLinkURI != "" {
		// The launch ends with a redirect to the target's path (package
		// web), so the path must be one a browser reads as this site's: a
		// path that begins with // is another site's address
		// (http://tool//evil.example/x would send the browser to
		// //evil.example/x).
		if u, err := url.Parse(c.TargetLinkURI); err != nil || !strings.EqualFold(u.Scheme+"://"+u.Host, base) || strings.HasPrefix(u.EscapedPath(), "//") {
			return nil, refuse(ReasonTarget, "This launch is for a page that is not on this tool's site.",
				fmt.Sprintf("target_link_uri %q is not a path under %s", c.TargetLinkURI, base))
		}
	}
	if c.MessageType == MessageDeepLinking && !slices.Contains(c.DeepLinking.AcceptTypes, "ltiResourceLink") {
		return nil, refuse(ReasonDeepLink, "The platform asked for content of a kind this tool does not make: it makes LTI resource links.",
			fmt.Sprintf("accept_types %q", c.DeepLinking.AcceptTypes))
	}
	return launchOf(p, c), nil
}

func audience(detail string) *Refusal {
	return refuse(ReasonAudience, "This launch was made for another tool (its audience is not this tool's client id). The platform's administrator should check the client id registered with the tool.", detail)
}

func missingClaims(names []string) *Refusal {
	return refuse(ReasonClaims, "The platform's launch lacks claims LTI 1.3 requires ("+strings.Join(names, ", ")+"). Tell the course's administrator.",
		"missing "+strings.Join(names, ", "))
}

func launchOf(p Platform, c claims) *Launch {
	l := &Launch{Platform: p, MessageType: c.MessageType, Deployment: c.DeploymentID, Subject: c.Sub, Name: c.Name,
		Roles: *c.Roles, TargetLinkURI: c.TargetLinkURI, DeepLinking: c.DeepLinking, Custom: map[string]string{}}
	if l.Name == "" {
		l.Name = strings.TrimSpace(c.GivenName + " " + c.FamilyName)
	}
	if c.Context != nil {
		l.ContextID, l.ContextTitle = c.Context.ID, cmpOr(c.Context.Title, c.Context.Label)
	}
	if c.ResourceLink != nil {
		l.ResourceLink, l.LinkTitle = c.ResourceLink.ID, c.ResourceLink.Title
	}
	if c.Presentation != nil {
		l.ReturnURL = c.Presentation.ReturnURL
	}
	for k, v := range c.Custom {
		l.Custom[k] = fmt.Sprint(v)
	}
	if c.AGS != nil && c.AGS.LineItem != "" && slices.Contains(c.AGS.Scope, ScopeScore) {
		l.LineItem = c.AGS.LineItem
	}
	return l
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
