// Names of serve/web that serve has always exported, so that the kwdata
// command and the access, billing and mail packages keep one import.

package serve

import (
	"net/netip"

	"github.com/kwdata/kwdata/serve/agent"
	"github.com/kwdata/kwdata/serve/web"
)

// Types shared by every room; serve/web documents them.
type (
	Access                    = web.Access
	AccountInfo               = web.AccountInfo
	Billing                   = web.Billing
	BodyError                 = web.BodyError
	HTTPError                 = web.HTTPError
	LogMailer                 = web.LogMailer
	Mail                      = web.Mail
	Mailer                    = web.Mailer
	QuotaError                = web.QuotaError
	Readier                   = web.Readier
	Registrar                 = web.Registrar
	Sessions                  = web.Sessions
	Signup                    = web.Signup
	Ticket                    = web.Ticket
	TooManyRegistrationsError = web.TooManyRegistrationsError
)

// Constants shared by every room; serve/web documents them.
const (
	BodyIncomplete           = web.BodyIncomplete
	BodyMalformed            = web.BodyMalformed
	BodyTimeout              = web.BodyTimeout
	CodeAccessUnavailable    = web.CodeAccessUnavailable
	CodeBillingUnavailable   = web.CodeBillingUnavailable
	CodeBodyTooLarge         = web.CodeBodyTooLarge
	CodeCountryNotIndexed    = web.CodeCountryNotIndexed
	CodeForbiddenOrigin      = web.CodeForbiddenOrigin
	CodeIndexUnavailable     = web.CodeIndexUnavailable
	CodeInternal             = web.CodeInternal
	CodeInvalidBody          = web.CodeInvalidBody
	CodeInvalidCode          = web.CodeInvalidCode
	CodeInvalidEmail         = web.CodeInvalidEmail
	CodeInvalidKey           = web.CodeInvalidKey
	CodeInvalidQ             = web.CodeInvalidQ
	CodeInvalidSignature     = web.CodeInvalidSignature
	CodeKeywordNotFound      = web.CodeKeywordNotFound
	CodeMailUnavailable      = web.CodeMailUnavailable
	CodeMethodNotAllowed     = web.CodeMethodNotAllowed
	CodeMissingQ             = web.CodeMissingQ
	CodeNoSubscription       = web.CodeNoSubscription
	CodeNotFound             = web.CodeNotFound
	CodeNotReady             = web.CodeNotReady
	CodeQTooLong             = web.CodeQTooLong
	CodeQuotaExhausted       = web.CodeQuotaExhausted
	CodeRateLimited          = web.CodeRateLimited
	CodeTooManyKeywords      = web.CodeTooManyKeywords
	CodeTooManyRegistrations = web.CodeTooManyRegistrations
	CodeUnsupportedCountry   = web.CodeUnsupportedCountry
	DefaultAnswerCacheBytes  = web.DefaultAnswerCacheBytes
	DefaultCountry           = web.DefaultCountry
	DidYouMean               = web.DidYouMean
	MaxBulkKeywords          = web.MaxBulkKeywords
	ProblemContentType       = web.ProblemContentType
)

// Error kinds shared by every room; serve/web documents them.
var (
	ErrAccessUnavailable = web.ErrAccessUnavailable
	ErrBadSignature      = web.ErrBadSignature
	ErrCodeInvalid       = web.ErrCodeInvalid
	ErrInvalidEmail      = web.ErrInvalidEmail
	ErrInvalidKey        = web.ErrInvalidKey
	ErrNoSubscription    = web.ErrNoSubscription
	ErrNotReady          = web.ErrNotReady
)

// ClientAddr is web.ClientAddr.
func ClientAddr(remoteAddr string, xff []string, trusted []netip.Prefix) netip.Addr {
	return web.ClientAddr(remoteAddr, xff, trusted)
}

// Error is web.Error.
func Error(status int, code, msg string, err error) HTTPError {
	return web.Error(status, code, msg, err)
}

// ParsePublicURL is web.ParsePublicURL.
func ParsePublicURL(raw string) (string, error) { return web.ParsePublicURL(raw) }

// CanonicalOrigin is web.CanonicalOrigin.
func CanonicalOrigin(s string) (string, error) { return web.CanonicalOrigin(s) }

// MaxMCPAnswer is agent.MaxMCPAnswer.
const MaxMCPAnswer = agent.MaxMCPAnswer
