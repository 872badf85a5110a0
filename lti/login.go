package lti

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"capacitylab/store"
)

// Login step.
const (
	// loginLife is how long a login's state waits for its launch.
	loginLife = 10 * time.Minute
	// stateCookiePrefix + the first 12 characters of a state names the
	// cookie that ties the state to the browser that started the login
	// (one cookie per login, so two launches at once in one page do not
	// overwrite each other's).
	stateCookiePrefix = "cl_lti_state_"
	// cookiePath limits the state cookie to the LTI endpoints.
	cookiePath = "/lti/"
)

// LoginRequest is a platform's third-party login initiation (GET or POST
// to the login URL).
type LoginRequest struct {
	Issuer        string // iss
	LoginHint     string // login_hint: opaque, sent back to the platform
	TargetLinkURI string // target_link_uri: where the launch should end
	MessageHint   string // lti_message_hint: opaque, sent back
	ClientID      string // client_id: which registration, when an issuer has several
	DeploymentID  string // lti_deployment_id
}

// LoginRequestOf reads a login initiation's parameters.
func LoginRequestOf(v url.Values) LoginRequest {
	return LoginRequest{Issuer: v.Get("iss"), LoginHint: v.Get("login_hint"), TargetLinkURI: v.Get("target_link_uri"),
		MessageHint: v.Get("lti_message_hint"), ClientID: v.Get("client_id"), DeploymentID: v.Get("lti_deployment_id")}
}

// Login is the answer to a login initiation: redirect the browser to
// RedirectURL (the platform's authorization endpoint) and set Cookie.
type Login struct {
	RedirectURL string
	Cookie      *http.Cookie
}

// Login starts a launch: it stores a new state and nonce and returns the
// authentication request to the platform, whose answer is to come back to
// redirectURI (our launch URL). With Config.MaxLogins logins waiting it
// stores nothing and returns store.ErrLTILoginsFull.
func (t *Tool) Login(ctx context.Context, in LoginRequest, redirectURI string) (Login, error) {
	var missing []string
	for _, f := range []struct{ name, v string }{{"iss", in.Issuer}, {"login_hint", in.LoginHint}, {"target_link_uri", in.TargetLinkURI}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return Login{}, refuse(ReasonClaims, "The platform's login request lacks "+strings.Join(missing, ", ")+"; LTI 1.3 needs iss, login_hint and target_link_uri. The platform's administrator should check the tool's login URL.",
			"login request without "+strings.Join(missing, ", "))
	}
	p, err := t.platform(ctx, in.Issuer, in.ClientID)
	if err != nil {
		return Login{}, err
	}
	if in.DeploymentID != "" && !slices.Contains(p.Deployments, in.DeploymentID) {
		return Login{}, deploymentRefusal(p, in.DeploymentID)
	}
	state, nonce, now := randomHex(16), randomHex(16), t.now()
	if err := t.store.SaveLTILogin(ctx, store.LTILogin{StateHash: hashOf(state), Nonce: nonce, Issuer: p.Issuer, ClientID: p.ClientID,
		CreatedAt: now, ExpiresAt: now.Add(loginLife)}, t.maxLogins); err != nil {
		return Login{}, err
	}
	u, err := url.Parse(p.AuthURL)
	if err != nil {
		return Login{}, err
	}
	q := u.Query()
	q.Set("scope", "openid")
	q.Set("response_type", "id_token")
	q.Set("response_mode", "form_post")
	q.Set("prompt", "none")
	q.Set("client_id", p.ClientID)
	q.Set("redirect_uri", redirectURI)
	q.Set("login_hint", in.LoginHint)
	q.Set("state", state)
	q.Set("nonce", nonce)
	if in.MessageHint != "" {
		q.Set("lti_message_hint", in.MessageHint)
	}
	u.RawQuery = q.Encode()
	return Login{RedirectURL: u.String(), Cookie: &http.Cookie{
		Name: stateCookiePrefix + state[:12], Value: state, Path: cookiePath, MaxAge: int(loginLife / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteNoneMode, Partitioned: true,
	}}, nil
}

// hasStateCookie reports whether the request carries the cookie of the
// login that issued state.
func hasStateCookie(r *http.Request, state string) bool {
	if len(state) < 12 {
		return false
	}
	c, err := r.Cookie(stateCookiePrefix + state[:12])
	return err == nil && c.Value == state
}

func deploymentRefusal(p Platform, id string) *Refusal {
	return refuse(ReasonDeployment, fmt.Sprintf("This launch comes from a deployment of the tool (%q) that is not registered for this platform. Its administrator should add the deployment id to the tool's registration.", id),
		fmt.Sprintf("deployment %q is not among %q of issuer %q client %q", id, p.Deployments, p.Issuer, p.ClientID))
}
