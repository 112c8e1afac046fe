package mail

import (
	"context"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/serve"
)

// TestSendThroughMailpit sends through a real SMTP server and reads the
// message back from it.
func TestSendThroughMailpit(t *testing.T) {
	mp := testservers.StartMailpit(t, false)
	s, err := NewSMTP("smtp://"+mp.SMTP, "", "kwdata <no-reply@kwdata.example>")
	if err != nil {
		t.Fatal(err)
	}
	err = s.SendMail(context.Background(), serve.Mail{To: "ann@example.com", Subject: "Your kwdata code: 123456", Text: "Your kwdata code is 123456\n"})
	if err != nil {
		t.Fatal(err)
	}
	msg := mp.Last(t, "ann@example.com")
	if msg.Subject != "Your kwdata code: 123456" || !strings.Contains(msg.Text, "Your kwdata code is 123456") ||
		msg.From.Address != "no-reply@kwdata.example" || msg.From.Name != "kwdata" {
		t.Errorf("Mailpit holds %+v", msg)
	}
}

// TestLoginNeedsTLS: with a login, a server that offers no STARTTLS gets
// no mail and never sees the password.
func TestLoginNeedsTLS(t *testing.T) {
	mp := testservers.StartMailpit(t, true)
	s, err := NewSMTP("smtp://kwdata:in-url@"+mp.SMTP, "from-env", "no-reply@kwdata.example")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.String(), "from-env") || strings.Contains(s.String(), "in-url") {
		t.Errorf("String() shows the password: %s", s)
	}
	err = s.SendMail(context.Background(), serve.Mail{To: "ann@example.com", Subject: "x", Text: "x"})
	if err == nil || strings.Contains(err.Error(), "from-env") {
		t.Fatalf("SendMail with a login and no STARTTLS: %v; want a refusal without the password", err)
	}
	if n := mp.Count(t); n != 0 {
		t.Errorf("Mailpit got %d messages", n)
	}
}

func TestNewSMTPRefuses(t *testing.T) {
	for _, tc := range []struct{ url, from, want string }{
		{"smtp://", "a@b.example", "no host"},
		{"http://mail.example:25", "a@b.example", "scheme"},
		{"smtp://mail.example:99999", "a@b.example", "port"},
		{"smtp://mail.example:587", "", "sender"},
		{"smtp://mail.example:587", "not an address", "sender"},
		{"smtp://%zz", "a@b.example", "parse"},
	} {
		if _, err := NewSMTP(tc.url, "", tc.from); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSMTP(%q, %q) = %v, want an error about %s", tc.url, tc.from, err, tc.want)
		}
	}
}

// TestSendFailsCleanly: a server that is not there is an error, not a hang.
func TestSendFailsCleanly(t *testing.T) {
	s, err := NewSMTP("smtp://127.0.0.1:1", "", "a@b.example")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendMail(context.Background(), serve.Mail{To: "ann@example.com", Subject: "x", Text: "x"}); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("SendMail to a closed port: %v", err)
	}
}
