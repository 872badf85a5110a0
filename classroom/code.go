package classroom

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// CodeAlphabet is the join codes' alphabet: capital letters and digits
// without the look-alikes 0, O, 1, I and L.
const CodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// CodeLength is the number of characters in a join code.
const CodeLength = 6

// codeHelp says what a join code looks like, for error messages.
const codeHelp = "a join code is six characters: letters A to Z without I, L and O, and digits 2 to 9"

// newCode returns a random join code. Every character is drawn uniformly
// from CodeAlphabet (bytes at or above the largest multiple of its length
// are rejected).
func newCode() string {
	const n = len(CodeAlphabet)
	limit := byte(256 - 256%n)
	var out [CodeLength]byte
	var buf [32]byte
	for i := 0; i < CodeLength; {
		rand.Read(buf[:])
		for _, b := range buf {
			if b >= limit || i == CodeLength {
				continue
			}
			out[i] = CodeAlphabet[int(b)%n]
			i++
		}
	}
	return string(out[:])
}

// NormalizeCode turns what a learner typed into a join code: letters are
// upper-cased and spaces and dashes dropped. It reports false if the
// result is not six characters of CodeAlphabet.
func NormalizeCode(s string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if r == ' ' || r == '-' || r == '\t' {
			continue
		}
		if r > 127 || !strings.ContainsRune(CodeAlphabet, r) || b.Len() >= CodeLength {
			return "", false
		}
		b.WriteRune(r)
	}
	if b.Len() != CodeLength {
		return "", false
	}
	return b.String(), true
}

// newHostToken returns 256 random bits, URL-safe base64 (43 characters).
func newHostToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newParticipantToken returns 128 random bits as 32 hex digits.
func newParticipantToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hashToken is what the store keeps of a token: SHA-256, hex.
func hashToken(t string) string {
	h := sha256.Sum256([]byte(t))
	return hex.EncodeToString(h[:])
}

// projectorToken derives the projector view's token from the stored hash
// of the host token: 256 bits (URL-safe base64) that only whoever holds
// the host token (or the store) can compute, and from which the host token
// cannot be recovered. The projector's address is on the class's screen,
// so it must not carry the host token.
func projectorToken(hostHash string) string {
	h := sha256.Sum256([]byte("capacitylab projector\x00" + hostHash))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// joinKey derives the key a session's join link and QR code carry from the
// stored hash of the host token: 72 bits (12 URL-safe base64 characters,
// short enough for a small QR code). It proves a joiner got the link from
// the room, so the join-code limit of an address does not hold them (see
// Manager.Lookup); it grants nothing a participant could not do.
func joinKey(hostHash string) string {
	h := sha256.Sum256([]byte("capacitylab join\x00" + hostHash))
	return base64.RawURLEncoding.EncodeToString(h[:9])
}

// sameHash compares a token with a stored hash in constant time.
func sameHash(token, hash string) bool {
	if token == "" || hash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashToken(token)), []byte(hash)) == 1
}
