package access

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Limits describes the allowance a counted response is charged to, in the
// terms of the IETF RateLimit header fields draft.
type Limits struct {
	// Policy names the window: "daily" (anonymous) or "monthly" (registered).
	Policy string
	// Quota is the allowance of the window.
	Quota int64
	// Window is the length of the current window: 86400 s for a day, the
	// length of the current calendar month for a month.
	Window time.Duration
	// Remaining is what is left of the allowance once this request counts.
	Remaining int64
	// Reset is the time until the window ends and the allowance is whole
	// again.
	Reset time.Duration
}

// SetHeaders sets the RateLimit-Policy and RateLimit fields, e.g.
//
//	RateLimit-Policy: "daily";q=20;w=86400
//	RateLimit: "daily";r=7;t=3600
func (l Limits) SetHeaders(h http.Header) {
	h["Ratelimit-Policy"] = []string{field(l.Policy, ";q=", l.Quota, ";w=", seconds(l.Window))}
	h["Ratelimit"] = []string{field(l.Policy, ";r=", max(l.Remaining, 0), ";t=", seconds(l.Reset))}
}

// field renders `"name";a=x;b=y` without fmt: it is on every counted
// response.
func field(name, a string, x int64, b string, y int64) string {
	buf := make([]byte, 0, 48)
	buf = append(buf, '"')
	buf = append(buf, name...)
	buf = append(buf, '"')
	buf = append(buf, a...)
	buf = strconv.AppendInt(buf, x, 10)
	buf = append(buf, b...)
	buf = strconv.AppendInt(buf, y, 10)
	return string(buf)
}

// seconds rounds up, so a client that waits t seconds finds the window reset.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// QuotaError reports an allowance that cannot cover a request. It wraps
// ErrQuotaExhausted (lookups), ErrTooManyRegistrations (registrations and
// sign-ins) or oauth.ErrTooManyClients (OAuth client registrations).
type QuotaError struct {
	// Limits describes the exhausted allowance; Remaining is what is left,
	// less than Requested.
	Limits
	// Requested is how many lookups the refused request needed.
	Requested int64
	// RetryAfter is when the window resets; the server sends it as
	// Retry-After (in seconds, equal to the RateLimit t parameter).
	RetryAfter time.Duration

	err error
}

// Error describes the refusal for the log. Clients never see it: the
// server words refusals from the numbers (serve's quotaMessage).
func (e *QuotaError) Error() string {
	if e.err == ErrTooManyRegistrations {
		return fmt.Sprintf("too many registrations: %d a day from this address, renews in %ds", e.Quota, seconds(e.RetryAfter))
	}
	if e.err != ErrQuotaExhausted {
		return fmt.Sprintf("%v: %d a day, renews in %ds", e.err, e.Quota, seconds(e.RetryAfter))
	}
	return fmt.Sprintf("quota exhausted: %s allowance of %d lookups has %d left, %d asked, renews in %ds",
		e.Policy, e.Quota, e.Remaining, e.Requested, seconds(e.RetryAfter))
}

// Unwrap returns the refusal: ErrQuotaExhausted, ErrTooManyRegistrations
// or oauth.ErrTooManyClients.
func (e *QuotaError) Unwrap() error { return e.err }

// SetHeaders sets Retry-After and, for lookup allowances, the RateLimit
// fields with the current remainder.
func (e *QuotaError) SetHeaders(h http.Header) {
	h.Set("Retry-After", strconv.FormatInt(seconds(e.RetryAfter), 10))
	if e.err == ErrQuotaExhausted {
		e.Limits.SetHeaders(h)
	}
}

// Policy names.
const (
	policyDaily         = "daily"
	policyMonthly       = "monthly"
	policyRegistrations = "registrations"
)

// kind is what a counter counts.
type kind uint8

const (
	kindAnon   kind = iota + 1 // anonymous lookups per address per day
	kindKey                    // registered lookups per key per month
	kindPaid                   // paid lookups per key per month (unlimited; for usage)
	kindReg                    // registrations per address per day
	kindRegNet                 // registrations per IPv6 /48 per day
	kindSignin                 // sign-in codes to known mailboxes per address per day
	kindClient                 // OAuth client registrations per address per day
)

// prefix is the counter database key prefix of a kind.
func (k kind) prefix() string {
	switch k {
	case kindAnon:
		return "anon/"
	case kindKey:
		return "key/"
	case kindPaid:
		return "paid/"
	case kindReg:
		return "reg/"
	case kindRegNet:
		return "reg48/"
	case kindSignin:
		return "signin/"
	case kindClient:
		return "oauthclient/"
	}
	panic("access: unknown counter kind")
}

func (k kind) daily() bool { return k.byAddr() }

// byAddr reports whether the counters of k are per client address (or
// network) rather than per key.
func (k kind) byAddr() bool {
	return k == kindAnon || k == kindReg || k == kindRegNet || k == kindSignin || k == kindClient
}

// window numbers the UTC day (days since 1970-01-01) or UTC calendar month
// (year*12 + month-1) that t falls in.
func (k kind) window(t time.Time) int32 {
	t = t.UTC()
	if k.daily() {
		s := t.Unix()
		d := s / 86400
		if s < 0 && s%86400 != 0 {
			d--
		}
		return int32(d)
	}
	return int32(t.Year()*12 + int(t.Month()) - 1)
}

// bounds returns the start and end of window w.
func (k kind) bounds(w int32) (start, end time.Time) {
	if k.daily() {
		start = time.Unix(int64(w)*86400, 0).UTC()
		return start, start.Add(24 * time.Hour)
	}
	y, m := int(w)/12, time.Month(int(w)%12+1)
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC), time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

// windowName renders window w as "2026-11-22" (day) or "2026-11" (month);
// both sort like the windows they name.
func (k kind) windowName(w int32) string {
	start, _ := k.bounds(w)
	if k.daily() {
		return start.Format(time.DateOnly)
	}
	return start.Format("2006-01")
}

// parseWindow is the inverse of windowName.
func (k kind) parseWindow(s string) (int32, bool) {
	layout := "2006-01"
	if k.daily() {
		layout = time.DateOnly
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return 0, false
	}
	return k.window(t), true
}
