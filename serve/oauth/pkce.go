package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// validChallenge reports whether c can be a PKCE S256 code_challenge: the
// unpadded base64url of a SHA-256, 43 characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil && len(b) == sha256.Size
}

// verifyPKCE reports whether verifier answers the S256 challenge (RFC 7636
// §4.6). The verifier must be 43 to 128 unreserved characters (§4.1).
func verifyPKCE(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 || !validChallenge(challenge) {
		return false
	}
	for i := 0; i < len(verifier); i++ {
		c := verifier[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}
