package playground

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

// AssetsPath is the URL path under which the handler serves the page's scripts, styles and
// licences. A server mounts the handler both at the page's path and at this prefix.
const AssetsPath = "/playground/assets/"

// DefaultQuery is what the query editor shows on a first visit.
const DefaultQuery = `# Welcome to msggate's GraphiQL.
#
# Every field except introspection needs a user: put a
# token after "Bearer " in the Headers tab below (get one
# with: msggate token -user alice), then run the query
# with Ctrl-Enter or the run button.
` + firstQuery

// TokenQuery is what the query editor shows on a first visit when the page comes with a token
// (Options.Token), which only a server that stored the demo data gives: besides the viewer's
// conversations it jumps into the demo group's history (docs/history.md), which no other
// deployment holds.
const TokenQuery = `# Welcome to msggate's GraphiQL.
#
# The Headers tab below holds a token that this server made
# for its demo data: run the query with Ctrl-Enter or the
# run button. Other users' tokens: msggate token -user bob
{
` + viewerQuery + `
  # Jumping into history (docs/history.md): the first message
  # of the demo group sent at or after 1 Nov 2026 11:00 UTC,
  # and the page around seq 101, which alice revoked (102 was
  # deleted for everyone). Go on with beforeSeq or afterSeq.
  friends: conversation(id: "sg_friends") {
    seqAtTime(time: 1793530800000)
    history(aroundSeq: 101, limit: 5) {
      hasMoreBefore
      hasMoreAfter
      messages {
        seq
        sendID
        content
        status
      }
    }
  }
}
`

// firstQuery lists the viewer's conversations, the first thing a new user wants to see.
const firstQuery = "{\n" + viewerQuery + "}\n"

// viewerQuery is the viewer's part of the first queries.
const viewerQuery = `  viewer {
    userID
    totalUnread
    conversations(first: 10) {
      nodes {
        id
        kind
        maxSeq
        unreadCount
        lastMessage {
          seq
          sendID
          content
          sendTime
        }
      }
      pageInfo {
        endCursor
        hasNextPage
      }
    }
  }
`

// Options configures the handler. The zero value serves a page that talks to /query.
type Options struct {
	// Endpoint is the GraphQL URL path, for queries (HTTP POST) and subscriptions (WebSocket on
	// the same path). Default "/query".
	Endpoint string
	// DefaultQuery fills the query editor on a first visit. Default DefaultQuery, or TokenQuery
	// when Token is set.
	DefaultQuery string
	// Token, when set, gives the bearer token the Headers tab opens with. It is for a server that
	// made its own demo user and printed its token (the embedded default), so that a first visit
	// runs a query as is; it is called for each page, so a token that expires can be renewed.
	// Default nil: the Headers tab holds "Bearer " for the user to complete, as any server that
	// serves real users must leave it.
	Token func() string
}

// contentSecurityPolicy keeps the page to its own origin: scripts, styles and fonts come from
// this server or are inlined as data: URLs by graphiql's stylesheet, and requests (HTTP and
// WebSocket) go only back to it. style-src allows inline styles because React and CodeMirror set
// them on elements. frame-ancestors stops other sites from framing a page that holds a token.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// immutable is the cache policy of assets: their URLs carry a hash of their content, so a
// changed file gets a new URL and a cached copy never goes stale.
const immutable = "public, max-age=31536000, immutable"

//go:embed assets web
var files embed.FS

// asset is one embedded file served under AssetsPath.
type asset struct {
	url         string // AssetsPath + content hash + "/" + name
	hash        string
	contentType string
	body        []byte
	gzipped     func() []byte // computed on first request that accepts gzip
}

// handler serves the page and its assets.
type handler struct {
	page   []byte                    // without a token (Options.Token nil)
	render func(*bytes.Buffer) error // the page with a fresh token (Options.Token set)
	assets map[string]*asset         // by name
}

// New returns the GraphiQL handler: the page for any GET it receives outside AssetsPath, and
// the embedded assets under AssetsPath. It panics if the embedded files are incomplete, which
// a test of this package catches before a build ships.
func New(o Options) http.Handler {
	if o.Endpoint == "" {
		o.Endpoint = "/query"
	}
	if o.DefaultQuery == "" {
		o.DefaultQuery = DefaultQuery
		if o.Token != nil {
			o.DefaultQuery = TokenQuery
		}
	}
	h := &handler{assets: map[string]*asset{}}
	for _, dir := range []string{"assets", "web"} {
		entries, err := fs.ReadDir(files, dir)
		if err != nil {
			panic(err)
		}
		for _, e := range entries {
			if e.IsDir() || e.Name() == "index.html" {
				continue
			}
			body, err := files.ReadFile(dir + "/" + e.Name())
			if err != nil {
				panic(err)
			}
			h.assets[e.Name()] = newAsset(e.Name(), body)
		}
	}
	url := func(name string) string {
		a, ok := h.assets[name]
		if !ok {
			panic("playground: embedded asset " + name + " is missing; run scripts/graphiql-assets")
		}
		return a.url
	}
	tmpl := template.Must(template.ParseFS(files, "web/index.html"))
	data := map[string]any{
		"Endpoint":     o.Endpoint,
		"DefaultQuery": o.DefaultQuery,
		"Token":        "",
		"Assets": map[string]string{
			"GraphiQLCSS": url("graphiql.min.css"),
			"PageCSS":     url("page.css"),
			"React":       url("react.production.min.js"),
			"ReactDOM":    url("react-dom.production.min.js"),
			"GraphiQL":    url("graphiql.min.js"),
			"Start":       url("start.js"),
		},
	}
	var page bytes.Buffer
	if err := tmpl.Execute(&page, data); err != nil {
		panic(err)
	}
	h.page = page.Bytes()
	if o.Token != nil {
		h.render = func(b *bytes.Buffer) error {
			withToken := maps.Clone(data)
			withToken["Token"] = o.Token()
			return tmpl.Execute(b, withToken)
		}
	}
	return h
}

func newAsset(name string, body []byte) *asset {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:8])
	a := &asset{
		url:         AssetsPath + hash + "/" + name,
		hash:        hash,
		contentType: contentType(name),
		body:        body,
	}
	a.gzipped = sync.OnceValue(func() []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		return buf.Bytes()
	})
	return a
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json":
		return "application/json"
	case ".html":
		return "text/html; charset=utf-8"
	}
	// LICENSE files and THIRD_PARTY_NOTICES.
	return "text/plain; charset=utf-8"
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if rest, ok := strings.CutPrefix(r.URL.Path, AssetsPath); ok {
		h.serveAsset(w, r, rest)
		return
	}
	hd := w.Header()
	page := h.page
	// The page names the current asset hashes, so it must be revalidated after an upgrade.
	cacheControl := "no-cache"
	if h.render != nil {
		var b bytes.Buffer
		if err := h.render(&b); err != nil {
			http.Error(w, "rendering the page failed", http.StatusInternalServerError)
			return
		}
		// A page that holds a token is kept by no cache.
		page, cacheControl = b.Bytes(), "no-store"
	}
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", cacheControl)
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Content-Length", strconv.Itoa(len(page)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(page)
}

// serveAsset answers "<hash>/<name>". A hash that is not the embedded file's is a page from
// another build asking for a file this build does not have: 404, so no cache keeps a mismatch.
func (h *handler) serveAsset(w http.ResponseWriter, r *http.Request, rest string) {
	hash, name, _ := strings.Cut(rest, "/")
	a, ok := h.assets[name]
	if !ok || hash != a.hash {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("Cache-Control", immutable)
	// Weak: the gzip and identity encodings are the same resource, byte for byte different.
	etag := `W/"` + a.hash + `"`
	hd.Set("ETag", etag)
	hd.Add("Vary", "Accept-Encoding")
	if noneMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = a.gzipped()
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// noneMatch reports whether an If-None-Match header names etag (weak comparison, as RFC 9110
// asks for If-None-Match).
func noneMatch(header, etag string) bool {
	weak := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == weak {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip (listed without q=0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, found := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if !found {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}
