package lti

import (
	"context"
	"errors"
	"fmt"
	"time"

	"capacitylab/store"
)

// deepLinkLife is how long a deep linking request waits for the
// instructor's choice.
const deepLinkLife = time.Hour

// DeepLinkForm is the form field that carries the signed deep linking
// response to the platform's return URL.
const DeepLinkForm = "JWT"

// DeepLink is a deep linking request waiting for the instructor's choice.
type DeepLink = store.LTIDeepLink

// ContentItem is one item of a deep linking response (Deep Linking 2.0,
// type ltiResourceLink).
type ContentItem struct {
	Type     string            `json:"type"` // "ltiResourceLink"
	Title    string            `json:"title,omitempty"`
	Text     string            `json:"text,omitempty"`
	URL      string            `json:"url,omitempty"` // the page a launch of the link opens (its target_link_uri)
	LineItem *LineItem         `json:"lineItem,omitempty"`
	Custom   map[string]string `json:"custom,omitempty"`
}

// LineItem asks the platform to make a gradebook column for a link.
type LineItem struct {
	ScoreMaximum float64 `json:"scoreMaximum"`
	Label        string  `json:"label"`
	ResourceID   string  `json:"resourceId,omitempty"`
	Tag          string  `json:"tag,omitempty"`
}

// BeginDeepLink stores a validated deep linking launch and returns the id
// the picker's form carries back.
func (t *Tool) BeginDeepLink(ctx context.Context, l *Launch) (string, error) {
	if l.DeepLinking == nil {
		return "", errors.New("lti: BeginDeepLink of a launch that is not a deep linking request")
	}
	id, now := randomHex(16), t.now()
	multiple := l.DeepLinking.Multiple == nil || *l.DeepLinking.Multiple
	err := t.store.SaveLTIDeepLink(ctx, hashOf(id), store.LTIDeepLink{Issuer: l.Platform.Issuer, ClientID: l.Platform.ClientID,
		Deployment: l.Deployment, ReturnURL: l.DeepLinking.ReturnURL, Data: l.DeepLinking.Data, Multiple: multiple,
		CreatedAt: now, ExpiresAt: now.Add(deepLinkLife)})
	return id, err
}

// DeepLinkRequest reads the waiting request with this id.
func (t *Tool) DeepLinkRequest(ctx context.Context, id string) (DeepLink, error) {
	d, err := t.store.LTIDeepLink(ctx, hashOf(id))
	switch {
	case errors.Is(err, store.ErrNoLTIDeepLink):
		return d, refuse(ReasonDeepLink, "This choice belongs to no request from the platform. Start again from the course: add the tool as content there.", "no deep linking request has this id")
	case err != nil:
		return d, err
	case !d.UsedAt.IsZero():
		return d, refuse(ReasonDeepLink, "This choice was already sent to the platform. To add more, start again from the course.", "deep linking request answered at "+d.UsedAt.UTC().Format(time.RFC3339))
	case t.now().After(d.ExpiresAt):
		return d, refuse(ReasonDeepLink, "This request from the platform waited over an hour and has expired. Start again from the course.", "deep linking request expired at "+d.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return d, nil
}

// deepLinkClaims is the payload of a deep linking response.
type deepLinkClaims struct {
	Iss         string        `json:"iss"`
	Aud         string        `json:"aud"`
	Iat         int64         `json:"iat"`
	Exp         int64         `json:"exp"`
	Nonce       string        `json:"nonce"`
	MessageType string        `json:"https://purl.imsglobal.org/spec/lti/claim/message_type"`
	Version     string        `json:"https://purl.imsglobal.org/spec/lti/claim/version"`
	Deployment  string        `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
	Items       []ContentItem `json:"https://purl.imsglobal.org/spec/lti-dl/claim/content_items"`
	Data        string        `json:"https://purl.imsglobal.org/spec/lti-dl/claim/data,omitempty"`
	Msg         string        `json:"https://purl.imsglobal.org/spec/lti-dl/claim/msg,omitempty"`
}

// DeepLinkResponse answers the request with id: it returns the platform's
// return URL and the signed response to post there as the form field
// DeepLinkForm. A request is answered once.
func (t *Tool) DeepLinkResponse(ctx context.Context, id string, items []ContentItem, msg string) (string, string, error) {
	d, err := t.DeepLinkRequest(ctx, id)
	if err != nil {
		return "", "", err
	}
	if len(items) > 1 && !d.Multiple {
		return "", "", refuse(ReasonDeepLink, "The platform takes one item at a time here: choose one.", fmt.Sprintf("%d items for a request that accepts one", len(items)))
	}
	now := t.now()
	if items == nil {
		items = []ContentItem{}
	}
	token, err := t.sign(ctx, deepLinkClaims{Iss: d.ClientID, Aud: d.Issuer, Iat: now.Unix(), Exp: now.Add(5 * time.Minute).Unix(),
		Nonce: randomHex(16), MessageType: "LtiDeepLinkingResponse", Version: Version, Deployment: d.Deployment,
		Items: items, Data: d.Data, Msg: msg})
	if err != nil {
		return "", "", err
	}
	ok, err := t.store.UseLTIDeepLink(ctx, hashOf(id), now)
	if err != nil {
		return "", "", err
	}
	if !ok {
		return "", "", refuse(ReasonDeepLink, "This choice was already sent to the platform. To add more, start again from the course.", "deep linking request answered meanwhile")
	}
	return d.ReturnURL, token, nil
}
