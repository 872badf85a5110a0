// Package lti is the tool side of IMS LTI 1.3 Core and LTI Advantage
// (Deep Linking 2.0, Assignment and Grade Services 2.0): a learning
// platform (Canvas, Moodle, Blackboard, Brightspace, Open edX) launches
// Capacity Lab's pages for its users, adds lessons, widgets and labs to
// its courses, and gets a learner's score back. The JOSE work (JWK sets,
// RS256 signatures, JWT claims) is lestrrat-go/jwx v3's; this package
// writes no cryptography.
//
// # Registration
//
// A platform is one client id at one issuer (Platform): its deployment
// ids, its OIDC authorization endpoint, OAuth 2 token endpoint and JWKS
// URL, the audience it wants in our client assertions (default its token
// URL) and the origins of its pages that frame ours (default the issuer's
// origin; Canvas's issuer is not where its courses are, so Canvas needs
// frame_origins). Platforms come from `server lti add` (stored) and from a
// platforms file read at start (kept in memory; it wins over a stored one
// with the same issuer and client id):
//
//	{"platforms": [{
//	  "name": "Moodle of Example University",
//	  "issuer": "https://moodle.example.edu",
//	  "client_id": "abc123",
//	  "deployments": ["1"],
//	  "auth_url": "https://moodle.example.edu/mod/lti/auth.php",
//	  "token_url": "https://moodle.example.edu/mod/lti/token.php",
//	  "jwks_url": "https://moodle.example.edu/mod/lti/certs.php",
//	  "token_audience": "",
//	  "frame_origins": []
//	}]}
//
// Endpoints must be https (http only to a loopback host). The list is read
// again every 30 s, and at once by a login naming an issuer it lacks.
// FrameAncestors gives every platform's frame origins, which package web
// adds to its pages' CSP frame-ancestors.
//
// # The tool's keys
//
// The tool signs with RSA 2048 keys, kid = the key's RFC 7638 thumbprint,
// kept in the store (PKCS #8 PEM). The first is made by the first request
// that needs one. RotateKey (`server lti rotate-key`) adds a key that is
// published at once (JWKS) and signs from KeyPublishDelay (10 min) later,
// longer than the JWKS's Cache-Control max-age (5 min), so no platform
// meets a kid it has not had the chance to fetch; --now signs with it at
// once (a leaked key). The key before stays published, so what it signed
// a moment ago still verifies; the store keeps the newest three. A
// rotation while a new key waits to sign is refused (unless --now).
//
// # Launch: login initiation, then the id_token
//
//  1. The platform sends the browser to the login URL (GET or POST) with
//     iss, login_hint, target_link_uri and optionally lti_message_hint,
//     client_id and lti_deployment_id. Login finds the registration
//     (refused: unknown platform; an issuer with several registrations
//     and no client_id; a deployment id it lacks), stores a new state and
//     nonce (random 128 bits each; the state only as its SHA-256) for 10
//     minutes (at most Config.MaxLogins waiting at once), sets the cookie cl_lti_state_<first 12 of the state> =
//     state (Path=/lti/, HttpOnly, Secure, SameSite=None, Partitioned), and
//     redirects to the authorization endpoint with scope=openid,
//     response_type=id_token, response_mode=form_post, prompt=none,
//     client_id, redirect_uri (our launch URL), login_hint, state, nonce
//     and lti_message_hint.
//  2. The platform's page posts id_token and state to the launch URL.
//     Launch checks, in this order, each failure a *Refusal with its
//     Reason: an OIDC error in the form (platform_error); a state, issued
//     by a login (no_login: "a launch without the login step"), not used
//     before (replayed), within its 10 minutes (login_expired), whose
//     cookie the browser sent back (state_cookie); an id_token that is a
//     compact JWS with one signature (malformed), alg RS256 (algorithm), a
//     kid (unknown_kid) found in the platform's JWKS (unknown_kid, after
//     fetching the set again; platform_keys if it cannot be fetched), whose
//     signature verifies (bad_signature); claims iss, aud, exp and iat
//     present (missing_claims), exp not passed and iat not in the future,
//     with a minute of clock skew (expired), iss the login's platform
//     (wrong_issuer), aud holding our client id, azp present when aud has
//     several and then our client id (wrong_audience); nonce present
//     (missing_claims) and the login's (nonce: a token replayed under
//     another login); sub, message_type, version, deployment_id and roles
//     present, and for a resource link resource_link.id and
//     target_link_uri, for deep linking deep_link_return_url
//     (missing_claims, naming them); version 1.3.0 (version); message type
//     LtiResourceLinkRequest or LtiDeepLinkingRequest (message_type);
//     deployment_id registered (unknown_deployment); target_link_uri on
//     this tool's origin, its path not beginning with // (which a browser
//     reads as another site's address) (target); a deep linking request that accepts
//     ltiResourceLink (deep_link). Last, the login is marked used, once: of
//     two launches racing with one state, one is refused as replayed.
//
// The platform's key sets are kept per JWKS URL for an hour; a kid the
// kept set lacks makes one fetch again, at most once per KeyRefetch (10
// s), so a platform's rotation is picked up by the first token its new
// key signs and made-up kids cannot make the tool hammer the platform.
//
// # Sessions and learners
//
// Begin maps the launch's (issuer, sub) to one learner of ours (32 hex
// digits, made at the first launch): their progress follows them to any
// device and any course of that platform. It stores a session (the
// learner, issuer, client id, deployment, course id and title, and
// whether the roles make them an instructor: IsInstructor) for
// SessionLife (8 hours) and returns the cookie cl_lti holding its token
// (random 256 bits; stored only as its SHA-256): Path=/, HttpOnly, Secure,
// SameSite=None, Partitioned. Session reads it back (kept in memory once
// read; sessions never change).
//
// Why cookies, and partitioned ones: inside the platform's iframe our
// pages are third-party, and browsers refuse unpartitioned third-party
// cookies (Chromium 156 headless does so even by default, as the browser
// test shows; Firefox partitions them on its own; Safari blocks them, and
// whether it keeps partitioned ones depends on its version: docs/LTI.md).
// A partitioned cookie (CHIPS) is kept per top-level site, so it works
// in the frame and is useless elsewhere. Secure is required with
// SameSite=None; browsers accept Secure cookies from http://localhost,
// which is what the tests use; anywhere else the tool must be on https.
// The alternative, a signed launch token in every link and form, would
// touch every page, form and script and leak into shared links.
//
// # Deep linking
//
// A deep linking launch begins a session too, and BeginDeepLink stores the
// request (return URL, data, whether several items are accepted) for an
// hour under a random id (its SHA-256 stored) that the picker's form
// carries. DeepLinkResponse answers it once: a JWT signed with the tool's
// key, iss = client id, aud = the platform's issuer, iat, exp (5 min),
// nonce, message_type LtiDeepLinkingResponse, version 1.3.0,
// deployment_id, content_items (ltiResourceLink: title, text, url, and for
// a graded lesson lineItem {scoreMaximum, label, resourceId, tag}), data
// echoed back. The browser posts it to the return URL as the form field
// JWT.
//
// # Grades (Assignment and Grade Services)
//
// A resource link launch whose AGS claim has a lineitem and grants the
// score scope, into a lesson's page, is a graded placement: Begin stores
// it per learner (lti_grades) and makes their score due. ProgressChanged
// (the web server calls it when a learner's predictions, checks, goals or
// finished lab runs change) makes it due again. A poster goroutine posts
// due scores: the score is computed when it is sent (ScoreFunc), so a
// retry sends the latest; POST {lineitem}/scores with
// application/vnd.ims.lis.v1.score+json {userId, scoreGiven,
// scoreMaximum, activityProgress InProgress or Completed, gradingProgress
// FullyGraded, timestamp, comment}. The bearer token comes from the
// platform's token endpoint by the client credentials grant with a JWT
// client assertion (RFC 7523: iss = sub = client id, aud = token audience,
// exp 5 min, jti), and is kept until a minute (or a tenth of its life)
// before it expires; a 401 drops it and asks for a new one once.
//
// A failed post (the platform down, a refused token, any status but 2xx)
// is recorded with its error and tried again after RetryBase (30 s),
// doubling up to RetryMax (1 h); after MaxAttempts (20, about 15 hours) the
// grade is failed until new progress or an instructor's retry
// (RetryCourse). All of it is in the store, so a restart continues where
// the last process stopped. A post that races with new progress leaves
// the grade due (its version moved). Two processes posting the same grade
// send the same score twice, which platforms take (the later timestamp
// wins).
//
// # What is stored
//
// Platforms, keys, logins (state hash, nonce; purged once
// expired), users (issuer, sub, learner id, the name claim if sent, first
// and last launch), sessions (token hash, learner, course id and title,
// instructor or not), deep linking requests, and grades (line item URL,
// the platform's user id, lesson, last score and how sending it stands).
// Email, picture, other claims and the id_token itself are not kept.
//
// Names and Roles Provisioning Services is not used.
package lti
