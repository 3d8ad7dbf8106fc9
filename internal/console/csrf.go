package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
)

// csrf guards every POST with a double-submitted token: a random nonce in
// a SameSite=Strict cookie, and in each form a hidden field holding the
// nonce's HMAC under a secret drawn at process start. A page on another
// site can neither read the cookie nor compute the field, and a token
// from an earlier process no longer passes.
type csrf struct{ secret [32]byte }

const (
	csrfCookie = "weir_console_csrf"
	csrfField  = "csrf"
)

func newCSRF() (*csrf, error) {
	c := &csrf{}
	if _, err := rand.Read(c.secret[:]); err != nil {
		return nil, fmt.Errorf("console: csrf secret: %w", err)
	}
	return c, nil
}

func (c *csrf) sign(nonce string) string {
	m := hmac.New(sha256.New, c.secret[:])
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// token returns the form token for this browser, setting its cookie
// first if it has none (or one this process did not issue the format of).
func (c *csrf) token(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) == 32 {
		return c.sign(ck.Value)
	}
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics on a broken source)
	nonce := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: nonce, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	// The same request may render a form: let it see its own cookie.
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: nonce})
	return c.sign(nonce)
}

// check reports whether a POST carries the token matching its cookie.
func (c *csrf) check(r *http.Request) bool {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || len(ck.Value) != 32 {
		return false
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	got := r.PostFormValue(csrfField)
	return got != "" && hmac.Equal([]byte(got), []byte(c.sign(ck.Value)))
}
