package lti

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"

	"capacitylab/input"
	"capacitylab/store"
)

// Platform is a registered learning platform (one client id at one
// issuer); see store.LTIPlatform for its fields.
type Platform = store.LTIPlatform

// platformJSON is a platform in the platforms file.
type platformJSON struct {
	Name          string   `json:"name"`
	Issuer        string   `json:"issuer"`
	ClientID      string   `json:"client_id"`
	Deployments   []string `json:"deployments"`
	AuthURL       string   `json:"auth_url"`
	TokenURL      string   `json:"token_url"`
	JWKSURL       string   `json:"jwks_url"`
	TokenAudience string   `json:"token_audience,omitempty"`
	FrameOrigins  []string `json:"frame_origins,omitempty"`
}

// ReadPlatformsFile reads a platforms file (format in the package doc) and
// checks every platform in it. Its errors name the file, the platform and
// the field.
func ReadPlatformsFile(path string) ([]Platform, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Platforms []platformJSON `json:"platforms"`
	}
	if err := input.DecodeJSONBytes(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %v: want {\"platforms\": [{\"issuer\": ..., \"client_id\": ..., \"deployments\": [...], \"auth_url\": ..., \"token_url\": ..., \"jwks_url\": ...}]}", path, err)
	}
	var out []Platform
	seen := map[string]bool{}
	for i, pj := range f.Platforms {
		p := Platform{Name: pj.Name, Issuer: pj.Issuer, ClientID: pj.ClientID, Deployments: pj.Deployments, AuthURL: pj.AuthURL,
			TokenURL: pj.TokenURL, JWKSURL: pj.JWKSURL, TokenAudience: pj.TokenAudience, FrameOrigins: pj.FrameOrigins}
		if err := CheckPlatform(p); err != nil {
			return nil, fmt.Errorf("%s: platform %d: %w", path, i+1, err)
		}
		k := p.Issuer + " " + p.ClientID
		if seen[k] {
			return nil, fmt.Errorf("%s: platform %d: issuer %s with client id %s is listed twice", path, i+1, p.Issuer, p.ClientID)
		}
		seen[k] = true
		out = append(out, p)
	}
	return out, nil
}

// CheckPlatform checks a platform's fields, naming the first one that is
// wrong and what is allowed.
func CheckPlatform(p Platform) error {
	if p.Issuer == "" {
		return fmt.Errorf("issuer is empty: want the platform's issuer, as its id_tokens' iss claim says (e.g. https://canvas.instructure.com)")
	}
	if strings.TrimSpace(p.ClientID) == "" {
		return fmt.Errorf("client_id is empty: want the client id the platform gave this tool")
	}
	if len(p.Deployments) == 0 {
		return fmt.Errorf("deployments is empty: want at least one deployment id from the platform")
	}
	for _, d := range p.Deployments {
		if strings.TrimSpace(d) == "" {
			return fmt.Errorf("deployments has an empty id")
		}
	}
	for _, f := range []struct{ name, v string }{{"auth_url", p.AuthURL}, {"token_url", p.TokenURL}, {"jwks_url", p.JWKSURL}} {
		if err := checkEndpoint(f.name, f.v); err != nil {
			return err
		}
	}
	for _, o := range p.FrameOrigins {
		if got, err := originOf(o); err != nil || got != strings.ToLower(strings.TrimSuffix(o, "/")) {
			return fmt.Errorf("frame_origins: %q is not an origin: want scheme://host[:port], such as https://school.instructure.com", o)
		}
	}
	return nil
}

// checkEndpoint accepts an https URL, or http to a loopback host (a
// platform on this machine, as in tests).
func checkEndpoint(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%s %q is not an absolute URL: want https://host/path", name, v)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return fmt.Errorf("%s %q is plain http: want https (http is allowed only for localhost)", name, v)
	}
	return nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// originOf returns scheme://host[:port] of an absolute http(s) URL.
func originOf(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("%q is not an absolute http(s) URL", v)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// FrameOriginsOf is where a platform's pages that frame ours are: its
// frame_origins, or else its issuer's origin (Moodle's issuer is its site;
// Canvas's is not, so Canvas needs frame_origins).
func FrameOriginsOf(p Platform) []string {
	if len(p.FrameOrigins) > 0 {
		out := make([]string, 0, len(p.FrameOrigins))
		for _, o := range p.FrameOrigins {
			if n, err := originOf(o); err == nil {
				out = append(out, n)
			}
		}
		return out
	}
	if o, err := originOf(p.Issuer); err == nil {
		return []string{o}
	}
	return nil
}

// Platforms returns the registered platforms: those of the platforms
// file, then the stored ones it does not name. The list is read again
// after platformsTTL.
func (t *Tool) Platforms(ctx context.Context) ([]Platform, error) {
	t.platMu.Lock()
	defer t.platMu.Unlock()
	if !t.platsAt.IsZero() && t.now().Sub(t.platsAt) < platformsTTL {
		return t.plats, nil
	}
	return t.reloadLocked(ctx)
}

func (t *Tool) reloadLocked(ctx context.Context) ([]Platform, error) {
	stored, err := t.store.LTIPlatforms(ctx)
	if err != nil {
		return t.plats, err
	}
	all := slices.Clone(t.file)
	for _, p := range stored {
		if !slices.ContainsFunc(t.file, func(f Platform) bool { return f.Issuer == p.Issuer && f.ClientID == p.ClientID }) {
			all = append(all, p)
		}
	}
	var origins []string
	for _, p := range all {
		for _, o := range FrameOriginsOf(p) {
			if !slices.Contains(origins, o) {
				origins = append(origins, o)
			}
		}
	}
	slices.Sort(origins)
	t.plats, t.platsAt, t.frame = all, t.now(), strings.Join(origins, " ")
	return all, nil
}

// platform finds a registration by issuer and client id ("" when the
// issuer has exactly one), reading the list again once if it is not there.
func (t *Tool) platform(ctx context.Context, issuer, clientID string) (Platform, error) {
	all, err := t.Platforms(ctx)
	if err != nil {
		return Platform{}, err
	}
	p, n := pick(all, issuer, clientID)
	if n == 0 {
		t.platMu.Lock()
		all, err = t.reloadLocked(ctx)
		t.platMu.Unlock()
		if err != nil {
			return Platform{}, err
		}
		p, n = pick(all, issuer, clientID)
	}
	switch {
	case n == 0 && clientID != "":
		return Platform{}, refuse(ReasonPlatform, "This learning platform is not registered with the tool: its administrator must add it first (issuer and client id as the platform shows them).",
			fmt.Sprintf("no platform with issuer %q and client id %q", issuer, clientID))
	case n == 0:
		return Platform{}, refuse(ReasonPlatform, "This learning platform is not registered with the tool: its administrator must add it first.",
			fmt.Sprintf("no platform with issuer %q", issuer))
	case n > 1:
		return Platform{}, refuse(ReasonPlatform, "This platform has several registrations with the tool and did not say which one (client_id) it is launching.",
			fmt.Sprintf("issuer %q has %d registrations and the login named no client_id", issuer, n))
	}
	return p, nil
}

func pick(all []Platform, issuer, clientID string) (Platform, int) {
	var found Platform
	n := 0
	for _, p := range all {
		if p.Issuer == issuer && (clientID == "" || p.ClientID == clientID) {
			found = p
			n++
		}
	}
	return found, n
}

// FrameAncestors returns the origins of the registered platforms' pages,
// space-separated and sorted, for a Content-Security-Policy
// frame-ancestors directive: so a platform may frame the pages it
// launches, and no other site may.
func (t *Tool) FrameAncestors(ctx context.Context) string {
	if _, err := t.Platforms(ctx); err != nil {
		t.log.ErrorContext(ctx, "lti: reading platforms", "err", err)
	}
	t.platMu.Lock()
	defer t.platMu.Unlock()
	return t.frame
}
