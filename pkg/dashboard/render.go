package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"time"
	"unicode/utf8"

	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/termsafe"
)

// assets are the dashboard's files, in the binary: nothing is fetched or built at install
// time.
//
//go:embed assets
var assets embed.FS

// pageNames are the templates, one file each under assets/templates, each rendered inside
// layout.html.
var pageNames = []string{"message", "overview", "interactions", "interaction", "confirm", "runs", "spend", "evidence"}

type pages struct{ t map[string]*template.Template }

var funcs = template.FuncMap{
	"short":      short,
	"money":      func(m money.Micros) string { return m.String() },
	"when":       when,
	"pathEscape": url.PathEscape,
	"add":        func(a, b int) int { return a + b },
}

func loadPages() (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/templates/layout.html", "assets/templates/fields.html", "assets/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		p.t[name] = t
	}
	return p, nil
}

// view is what layout.html renders: the page's own data in Data.
type view struct {
	Title  string
	Nav    string
	CSRF   string
	Script bool
	Data   any
}

// message is the data of message.html: a page that says one thing.
type message struct {
	Text  string
	Error bool
}

// render writes a page. Every string of data, which holds peers' and agents' text, is
// rendered by termsafe.Page first (U1); html/template then escapes it for where it stands.
func (s *Server) render(w http.ResponseWriter, status int, name, title, nav string, sess *session, data any) {
	termsafe.Walk(&data, termsafe.Page)
	v := view{Title: termsafe.PageLine(title), Nav: nav, Script: name == "runs", Data: data}
	if sess != nil {
		v.CSRF = sess.csrf
	}
	var buf bytes.Buffer
	if err := s.pages.t[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		s.log.Error("dashboard page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered; anetd's log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fail writes a page that says what went wrong.
func (s *Server) fail(w http.ResponseWriter, status int, title, text string) {
	s.render(w, status, "message", title, "", nil, message{Text: text, Error: true})
}

// static serves the embedded CSS and JS.
func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	var ctype string
	switch path.Ext(name) {
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	default:
		s.fail(w, http.StatusNotFound, "Not found", "There is no such file.")
		return
	}
	b, err := fs.ReadFile(assets, "assets/static/"+name)
	if err != nil {
		s.fail(w, http.StatusNotFound, "Not found", "There is no such file.")
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// short cuts s to n characters, marking the cut.
func short(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// when is a time as the operator reads it: the node's local time, to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
