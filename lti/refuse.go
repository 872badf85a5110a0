package lti

// Reasons a login or launch is refused (Refusal.Reason); the package doc
// says what each checks.
const (
	ReasonPlatform    = "unknown_platform"   // no registration for the issuer (and client id)
	ReasonNoLogin     = "no_login"           // a launch without our login step: no state, or one we never issued
	ReasonLoginExpire = "login_expired"      // the launch came over 10 minutes after the login
	ReasonStateCookie = "state_cookie"       // the browser did not send back the login's cookie
	ReasonReplay      = "replayed"           // the login's state (and so its nonce) was used already
	ReasonNonce       = "nonce"              // the id_token's nonce is not the one this login issued
	ReasonMalformed   = "malformed"          // not a compact JWS with one RS256 signature
	ReasonAlgorithm   = "algorithm"          // signed with another algorithm than RS256
	ReasonUnknownKid  = "unknown_kid"        // no key with the token's kid, even after fetching the keys again
	ReasonKeys        = "platform_keys"      // the platform's keys could not be fetched
	ReasonSignature   = "bad_signature"      // the signature does not verify with the platform's key
	ReasonExpired     = "expired"            // exp has passed (or iat is in the future)
	ReasonIssuer      = "wrong_issuer"       // iss is not the platform the login was for
	ReasonAudience    = "wrong_audience"     // aud (or azp) is not our client id
	ReasonClaims      = "missing_claims"     // required claims are missing
	ReasonVersion     = "version"            // LTI version is not 1.3.0
	ReasonMessage     = "message_type"       // a message type we do not take
	ReasonDeployment  = "unknown_deployment" // deployment id not registered for the platform
	ReasonTarget      = "target"             // target_link_uri is not a page of this tool
	ReasonPlatformErr = "platform_error"     // the platform answered the login with an OIDC error
	ReasonDeepLink    = "deep_link"          // a deep linking answer we cannot give
)

// Refusal is why a login, launch or deep linking answer was refused.
// Message is for the person in front of the page (say what happened and
// who can fix it); Detail is for the log only.
type Refusal struct {
	Reason  string
	Message string
	Detail  string
}

func (r *Refusal) Error() string { return "lti " + r.Reason + ": " + r.Detail }

func refuse(reason, msg, detail string) *Refusal {
	return &Refusal{Reason: reason, Message: msg, Detail: detail}
}
