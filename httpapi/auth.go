package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// Authorizer decides whether a request may be served. A non-nil error
// denies it: the handler answers 401 with `WWW-Authenticate: Bearer` and the
// plain-text body `missing or invalid API token` (as Obelisk does), and logs
// the error text at WARN. Implementations must be safe for concurrent use.
type Authorizer interface {
	Authorize(r *http.Request) error
}

// Reasons a bearer token is rejected (Obelisk's texts).
var (
	errMissingAuthorization   = errors.New("missing `authorization` header")
	errMalformedAuthorization = errors.New("malformed `authorization` header")
	errUnsupportedScheme      = errors.New("unsupported `authorization` scheme, expected `Bearer`")
	errUnknownToken           = errors.New("unknown token")
	errAllDenied              = errors.New("no authorizer configured")
)

// unauthorizedBody is the body of every 401.
const unauthorizedBody = "missing or invalid API token"

// BearerToken accepts requests carrying `Authorization: Bearer <token>`. The
// scheme is matched case-insensitively and the token is trimmed; tokens are
// compared as SHA-256 digests in constant time. An empty token accepts nothing.
func BearerToken(token string) Authorizer {
	return bearer{want: sha256.Sum256([]byte(token)), empty: token == ""}
}

type bearer struct {
	want  [sha256.Size]byte
	empty bool
}

func (b bearer) Authorize(r *http.Request) error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return errMissingAuthorization
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok {
		return errMalformedAuthorization
	}
	if !strings.EqualFold(scheme, "Bearer") {
		return errUnsupportedScheme
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(got[:], b.want[:]) != 1 || b.empty {
		return errUnknownToken
	}
	return nil
}

// AllowAll accepts every request (Obelisk's --allow-unauthenticated-api).
func AllowAll() Authorizer { return allowAll{} }

type allowAll struct{}

func (allowAll) Authorize(*http.Request) error { return nil }

// denyAll is the fail-closed default for a nil Options.Authorizer.
type denyAll struct{}

func (denyAll) Authorize(*http.Request) error { return errAllDenied }

func writeUnauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	w.Header().Set("Content-Type", contentTypeText)
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(unauthorizedBody))
}
