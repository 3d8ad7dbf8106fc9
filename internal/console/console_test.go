package console

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestShow(t *testing.T) {
	for _, c := range []struct {
		in, format, wantFormat, wantText string
	}{
		{`{"a":1}`, "auto", "json", "{\n  \"a\": 1\n}"},
		{`[1, 2]`, "auto", "json", "[\n  1,\n  2\n]"},
		{`plain <b>text</b>`, "auto", "text", `plain <b>text</b>`},
		{"\x00\xff", "auto", "hex", "00ff"},
		{`{"a":1}`, "hex", "hex", "7b2261223a317d"},
		{`not json`, "json", "text", "not json"},
		{"bad \xff utf8", "text", "text", "bad \uFFFD utf8"},
	} {
		got := show([]byte(c.in), c.format)
		if got.Format != c.wantFormat || got.Text != c.wantText {
			t.Errorf("show(%q, %s) = %s %q, want %s %q", c.in, c.format, got.Format, got.Text, c.wantFormat, c.wantText)
		}
	}
	if got := show(nil, "auto"); got.Format != "null" {
		t.Errorf("a null value shows as %s", got.Format)
	}
	big := show([]byte(strings.Repeat("x", 3*maxShownBytes)), "auto")
	if !big.Cut || len(big.Text) != maxShownBytes || big.Size != 3*maxShownBytes {
		t.Errorf("a long value: cut %v, %d bytes shown of %d", big.Cut, len(big.Text), big.Size)
	}
}

// FuzzShow: any record bytes in any format give valid UTF-8 text within
// the display bound, never a panic.
func FuzzShow(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":null}]}`, "<script>x</script>", "\x00\x01\xfe", "[", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, format := range []string{"auto", "text", "json", "hex"} {
			got := show(b, format)
			if !utf8.ValidString(got.Text) {
				t.Fatalf("%s: invalid UTF-8 shown", format)
			}
			if len(got.Text) > 8*maxShownBytes {
				t.Fatalf("%s: %d bytes shown", format, len(got.Text))
			}
		}
	})
}

func TestParsePlan(t *testing.T) {
	os, err := parsePlan("orders:0:5,orders:2:0,a.b-c_d:1:9")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := os.Lookup("orders", 0); !ok || o.At != 5 {
		t.Errorf("orders/0: %+v", o)
	}
	if o, ok := os.Lookup("a.b-c_d", 1); !ok || o.At != 9 {
		t.Errorf("a.b-c_d/1: %+v", o)
	}
	for _, bad := range []string{"", "orders:0", "orders:x:1", "orders:0:-1", ":0:1", "orders:-1:0", "a:0:1:2"} {
		if _, err := parsePlan(bad); err == nil {
			t.Errorf("plan %q accepted", bad)
		}
	}
}

func TestCSRF(t *testing.T) {
	c, err := newCSRF()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	token := c.token(rec, httptest.NewRequest("GET", "/", nil))
	cookie := rec.Result().Cookies()[0]
	if cookie.SameSite != http.SameSiteStrictMode || !cookie.HttpOnly {
		t.Errorf("cookie %+v: want SameSite=Strict, HttpOnly", cookie)
	}
	post := func(ck *http.Cookie, tok string) bool {
		r := httptest.NewRequest("POST", "/topics", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if ck != nil {
			r.AddCookie(ck)
		}
		return c.check(r)
	}
	if !post(cookie, token) {
		t.Error("the right token is refused")
	}
	other, _ := newCSRF()
	if post(nil, token) || post(cookie, "") || post(cookie, other.sign(cookie.Value)) || post(&http.Cookie{Name: csrfCookie, Value: strings.Repeat("0", 32)}, token) {
		t.Error("a POST without its cookie's token passed")
	}
}

// A request naming another host (DNS rebinding onto loopback) is refused
// unless the console listens on every interface.
func TestHostAllowed(t *testing.T) {
	for _, c := range []struct {
		bind, host string
		ok         bool
	}{
		{"127.0.0.1", "127.0.0.1:9645", true},
		{"127.0.0.1", "localhost:9645", true},
		{"127.0.0.1", "[::1]:9645", true},
		{"127.0.0.1", "evil.example:9645", false},
		{"127.0.0.1", "evil.example", false},
		{"console.internal", "console.internal:80", true},
		{"console.internal", "evil.example", false},
		{"0.0.0.0", "anything.example", true},
		{"::", "anything.example", true},
		{"", "anything.example", true},
	} {
		s := &Server{cfg: Config{ListenHost: c.bind}}
		if got := s.hostAllowed(c.host); got != c.ok {
			t.Errorf("listening on %q, Host %q allowed=%v, want %v", c.bind, c.host, got, c.ok)
		}
	}
}

// A broker's error message is shown with the code's name in place of
// franz-go's generic description, and the code still matches.
func TestKafkaErr(t *testing.T) {
	err := kafkaErr(kerr.InvalidPartitions, `topic "t" has 5 partitions, more than the requested 2`)
	if got := err.Error(); got != `INVALID_PARTITIONS: topic "t" has 5 partitions, more than the requested 2` {
		t.Errorf("shown as %q", got)
	}
	if !errors.Is(err, kerr.InvalidPartitions) {
		t.Error("the code is lost")
	}
	if got := kafkaErr(kerr.InvalidPartitions, "").Error(); got != kerr.InvalidPartitions.Error() {
		t.Errorf("no message: %q", got)
	}
}
