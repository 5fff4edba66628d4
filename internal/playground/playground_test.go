package playground

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

type manifest struct {
	Packages []struct {
		Name, Version, License, Integrity string
	}
	Files []struct {
		Path, SHA256, Package, From string
	}
}

// Ensure the embedded assets are exactly what scripts/graphiql-assets produced from the pinned
// packages: every file is listed with its hash, each pin in npm/package.json is recorded with
// the version the lockfile resolved, and each served package's licence is embedded.
func TestEmbeddedAssetsMatchManifest(t *testing.T) {
	raw, err := files.ReadFile("assets/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{"manifest.json": true}
	for _, f := range m.Files {
		listed[f.Path] = true
		b, err := files.ReadFile("assets/" + f.Path)
		if err != nil {
			t.Errorf("%s is in the manifest but not embedded: %v", f.Path, err)
			continue
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
			t.Errorf("%s: sha256 %s, manifest says %s (edited by hand? rerun scripts/graphiql-assets)", f.Path, got, f.SHA256)
		}
	}
	entries, _ := fs.ReadDir(files, "assets")
	for _, e := range entries {
		if !listed[e.Name()] {
			t.Errorf("assets/%s is embedded but not in the manifest", e.Name())
		}
	}

	var pins struct{ Dependencies map[string]string }
	pj, err := os.ReadFile("npm/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(pj, &pins); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{}
	for _, p := range m.Packages {
		recorded[p.Name] = p.Version
		if p.Integrity == "" || p.License == "" {
			t.Errorf("%s@%s: no integrity or licence recorded", p.Name, p.Version)
		}
	}
	for name, version := range pins.Dependencies {
		if recorded[name] != version {
			t.Errorf("npm/package.json pins %s@%s, the manifest records %q", name, version, recorded[name])
		}
	}
	for _, name := range []string{"graphiql.LICENSE", "react.LICENSE", "react-dom.LICENSE", "THIRD_PARTY_NOTICES"} {
		if b, err := files.ReadFile("assets/" + name); err != nil || !bytes.Contains(b, []byte("Permission is hereby granted")) {
			t.Errorf("%s: missing or not a licence text (err %v)", name, err)
		}
	}
}

var refAttr = regexp.MustCompile(`(?:src|href)="([^"]*)"`)

// Ensure the page references nothing outside its own origin, every file it references is
// served with its content type and a long-lived cache policy, and the page itself carries a
// same-origin content security policy and is revalidated on each visit.
func TestPageLoadsOnlyItsOwnAssets(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()

	resp, page := get(t, srv.URL+"/", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}
	for k, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"Cache-Control":          "no-cache",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("page %s = %q, want %q", k, got, want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("page CSP %q does not keep scripts and requests to the origin", csp)
	}
	for _, s := range []string{"http://", "https://", "//cdn", "unpkg", "jsdelivr"} {
		if bytes.Contains(page, []byte(s)) {
			t.Errorf("page mentions %q:\n%s", s, page)
		}
	}
	if !bytes.Contains(page, []byte(`data-endpoint="/query"`)) {
		t.Errorf("page does not point GraphiQL at /query:\n%s", page)
	}

	wantTypes := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	refs := refAttr.FindAllSubmatch(page, -1)
	var scripts int
	for _, m := range refs {
		ref := string(m[1])
		if strings.HasPrefix(ref, "data:") {
			continue
		}
		if !strings.HasPrefix(ref, AssetsPath) {
			t.Errorf("page references %q outside %s", ref, AssetsPath)
			continue
		}
		resp, body := get(t, srv.URL+ref, nil)
		ext := ref[strings.LastIndex(ref, "."):]
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s: %d, %d bytes", ref, resp.StatusCode, len(body))
		}
		if got := resp.Header.Get("Content-Type"); got != wantTypes[ext] {
			t.Errorf("GET %s: Content-Type %q, want %q", ref, got, wantTypes[ext])
		}
		if got := resp.Header.Get("Cache-Control"); !strings.Contains(got, "max-age=31536000") || !strings.Contains(got, "immutable") {
			t.Errorf("GET %s: Cache-Control %q, want a year and immutable", ref, got)
		}
		if ext == ".js" {
			scripts++
		}
	}
	if scripts != 4 {
		t.Errorf("page loads %d scripts, want react, react-dom, graphiql and the start script", scripts)
	}
}

var tokenAttr = regexp.MustCompile(`data-token="([^"]*)"`)

// Ensure the page carries a token only when the server gave one (the embedded default's demo
// token): without Options.Token the Headers tab gets no token and the page may be cached for
// revalidation; with it, each page holds the token current when it was served, the query editor
// says the token is there, and no cache keeps the page.
func TestPageHoldsATokenOnlyWhenConfigured(t *testing.T) {
	plain := httptest.NewServer(New(Options{}))
	defer plain.Close()
	resp, page := get(t, plain.URL+"/", nil)
	if m := tokenAttr.FindSubmatch(page); m == nil || len(m[1]) != 0 {
		t.Errorf("a page without Options.Token has data-token %q, want it present and empty", m)
	}
	if !bytes.Contains(page, []byte("put a")) || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("a page without a token: Cache-Control %q, query editor\n%s", resp.Header.Get("Cache-Control"), page)
	}

	issued := 0
	withToken := httptest.NewServer(New(Options{Token: func() string {
		issued++
		return "demo.token-" + strconv.Itoa(issued)
	}}))
	defer withToken.Close()
	for want := 1; want <= 2; want++ {
		resp, page := get(t, withToken.URL+"/", nil)
		m := tokenAttr.FindSubmatch(page)
		if m == nil || string(m[1]) != "demo.token-"+strconv.Itoa(want) {
			t.Fatalf("page %d has data-token %q, want demo.token-%d", want, m, want)
		}
		if got := resp.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("a page with a token: Cache-Control %q, want no-store", got)
		}
		if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(page)) {
			t.Errorf("Content-Length %s for a %d-byte page", got, len(page))
		}
		if !bytes.Contains(page, []byte("holds a token that this server made")) {
			t.Errorf("the query editor of a page with a token does not say so:\n%s", page)
		}
	}
	// The start script puts the token after "Bearer " in the Headers tab.
	start, err := files.ReadFile("web/start.js")
	if err != nil || !bytes.Contains(start, []byte("'Bearer ' + (root.dataset.token || '')")) {
		t.Errorf("web/start.js does not fill the Headers tab from data-token (err %v)", err)
	}
}

// Ensure an asset is sent gzipped to a client that accepts it and as is otherwise, a revalidation
// with its ETag is answered 304, a URL with a stale hash is 404, and only GET and HEAD are served.
func TestAssetEncodingAndRevalidation(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	_, page := get(t, srv.URL+"/", nil)
	var jsURL string
	for _, m := range refAttr.FindAllSubmatch(page, -1) {
		if strings.HasSuffix(string(m[1]), "/graphiql.min.js") {
			jsURL = srv.URL + string(m[1])
		}
	}
	if jsURL == "" {
		t.Fatalf("page has no graphiql.min.js:\n%s", page)
	}
	want, _ := files.ReadFile("assets/graphiql.min.js")

	resp, plain := get(t, jsURL, map[string]string{"Accept-Encoding": "identity"})
	if resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(plain, want) {
		t.Errorf("identity: Content-Encoding %q, %d bytes, want the embedded %d", resp.Header.Get("Content-Encoding"), len(plain), len(want))
	}
	resp, zipped := get(t, jsURL, map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
	if resp.Header.Get("Content-Encoding") != "gzip" || len(zipped) >= len(want)/2 {
		t.Errorf("gzip: Content-Encoding %q, %d bytes of %d", resp.Header.Get("Content-Encoding"), len(zipped), len(want))
	} else {
		zr, err := gzip.NewReader(bytes.NewReader(zipped))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := io.ReadAll(zr); !bytes.Equal(got, want) {
			t.Errorf("gzip body does not inflate to the embedded file")
		}
	}
	resp, _ = get(t, jsURL, map[string]string{"Accept-Encoding": "gzip;q=0"})
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 still got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}

	etag := resp.Header.Get("ETag")
	if resp, body := get(t, jsURL, map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Errorf("If-None-Match %s: %d with %d bytes, want 304 and no body", etag, resp.StatusCode, len(body))
	}
	stale := srv.URL + AssetsPath + "0000000000000000/graphiql.min.js"
	if resp, _ := get(t, stale, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET %s: %d, want 404", stale, resp.StatusCode)
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", resp.StatusCode)
	}
}

func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
