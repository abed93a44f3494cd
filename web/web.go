package web

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"time"

	jsclient "github.com/offlinebox/offlinebox/clients/js"
)

//go:embed static
var static embed.FS

// Handler serves the page at / and its assets under /static/, and hands
// every other request to api.
func Handler(api http.Handler) http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	mux := http.NewServeMux()
	mux.Handle("GET /static/offlinebox.js", pageHeaders(noCache(http.HandlerFunc(serveClientModule))))
	mux.Handle("GET /static/", pageHeaders(http.StripPrefix("/static/", noCache(files))))
	mux.Handle("GET /{$}", pageHeaders(noCache(files)))
	mux.Handle("/", api)
	return mux
}

// serveClientModule answers the JavaScript client module (clients/js),
// the page's protocol code, from the one file npm ships.
func serveClientModule(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	http.ServeContent(w, r, "offlinebox.js", time.Time{}, bytes.NewReader(jsclient.Module))
}

// contentSecurityPolicy: nothing loaded or connected to but this origin
// ('self' covers the live channel's ws:/wss: on the same host), and the
// page never framed.
const contentSecurityPolicy = "default-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"

// pageHeaders sets on every response of the page and its assets what
// keeps them from being framed (X-Frame-Options for browsers before
// frame-ancestors), sniffed as another type, or naming the page in
// another site's Referer.
func pageHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// noCache makes the browser revalidate assets: a new build is seen at
// the next load.
func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}
