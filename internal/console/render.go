package console

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// page is what every template gets: the layout's fields and the page's
// own data in Data.
type page struct {
	Title string
	Nav   string // "overview", "topics" or "groups": the highlighted tab
	CSRF  string
	Flash string // the outcome of the action that redirected here
	Error string // a failed request, shown above the page
	Data  any
}

var funcs = map[string]any{
	"bytes":      humanBytes,
	"ints":       joinInts,
	"millis":     formatMillis,
	"pathEscape": pathEscape,
	"rate":       humanRate,
}

func humanBytes(n int64) string {
	if n < 0 {
		return ""
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// render executes a page template into a buffer first, so a failure
// midway gives a clean 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := s.pages[name]
	if !ok {
		http.Error(w, "no such page template", http.StatusInternalServerError)
		return
	}
	p.CSRF = s.csrf.token(w, r)
	if p.Flash == "" {
		p.Flash = r.URL.Query().Get("flash")
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		s.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "rendering failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// redirect sends the browser on after a POST (303: the next request is a
// GET), with a message for the page it lands on.
func redirect(w http.ResponseWriter, r *http.Request, path, flash string) {
	if flash != "" {
		path += "?flash=" + url.QueryEscape(flash)
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

func joinInts(v []int32) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(int(n))
	}
	return strings.Join(s, ", ")
}

// pathEscape makes a topic or group name one path segment.
func pathEscape(s string) string { return url.PathEscape(s) }

func formatMillis(ms int64) string {
	if ms < 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000 MST")
}
