package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxJWKSBytes bounds a fetched key set; real ones are a few KiB.
const maxJWKSBytes = 1 << 20

// jwksSource keeps an identity provider's keys, read from a file or fetched over HTTPS, and
// reads them again when they are older than refresh, or when a token names a key they lack
// (the provider rotated its keys) but not more often than every minRefresh, so that tokens
// with made-up key IDs cannot make msggate hammer the provider. A failed read keeps the keys
// it had.
//
// A read runs in the background, bounded by timeout alone, never by the context of the
// request that asked for it: a client that hangs up while the keys are read must not make the
// read fail, or its made-up key ID would hold every read back for minRefresh and keep a
// rotated key out. Requests that need the keys meanwhile wait for that one read (as long as
// their own context lets them) rather than start another.
type jwksSource struct {
	location   string // a file path or an https:// URL
	client     *http.Client
	timeout    time.Duration
	refresh    time.Duration
	minRefresh time.Duration

	keys atomic.Pointer[keySnapshot]

	mu          sync.Mutex
	reading     chan struct{} // closed when the read under way ends; nil when none is
	lastAttempt time.Time     // when the last read began
	lastErr     error         // the last read's failure; nil when it succeeded
}

type keySnapshot struct {
	set  keySet
	read time.Time
}

// load reads the keys now, whatever their age, on ctx: the start-up's.
func (s *jwksSource) load(ctx context.Context) error {
	s.mu.Lock()
	s.lastAttempt = time.Now()
	s.mu.Unlock()
	set, err := s.fetch(ctx)
	s.readDone(set, err)
	return s.lastError()
}

// readDone records a read's result.
func (s *jwksSource) readDone(set keySet, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastErr = fmt.Errorf("read the identity provider's keys from %s: %w", s.location, err)
		return
	}
	s.lastErr = nil
	s.keys.Store(&keySnapshot{set: set, read: time.Now()})
}

func (s *jwksSource) lastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// startRead returns a channel closed when the keys have been read again: the read under way,
// or a new one. It returns nil when the keys are not to be read now: they changed since
// seen was taken (a read ended meanwhile), or the last read began less than minRefresh ago.
func (s *jwksSource) startRead(seen *keySnapshot) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.reading != nil:
		return s.reading
	case s.keys.Load() != seen, time.Since(s.lastAttempt) < s.minRefresh:
		return nil
	}
	done := make(chan struct{})
	s.reading, s.lastAttempt = done, time.Now()
	go func() {
		// The timeout bounds the read (fetch); nothing a client does cuts it short.
		set, err := s.fetch(context.Background())
		s.readDone(set, err)
		s.mu.Lock()
		s.reading = nil
		s.mu.Unlock()
		close(done)
	}()
	return done
}

func (s *jwksSource) fetch(ctx context.Context) (keySet, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var data []byte
	var err error
	if strings.HasPrefix(s.location, "https://") {
		data, err = s.get(ctx)
	} else {
		data, err = os.ReadFile(s.location)
	}
	if err != nil {
		return nil, err
	}
	return parseJWKS(data)
}

func (s *jwksSource) get(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.location, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err == nil && len(data) > maxJWKSBytes {
		err = fmt.Errorf("the key set is larger than %d bytes", maxJWKSBytes)
	}
	return data, err
}

// errKeysUnavailable marks a key lookup that failed because the keys could not be read, which
// says nothing about the token.
var errKeysUnavailable = errors.New("the identity provider's keys could not be read")

// key returns the key kid for alg. It reads the keys again first when they are stale, and when
// kid is not among them, unless they were read less than minRefresh ago; it waits for that
// read while ctx lets it. It reports errKeysUnavailable (wrapping the cause) when the key is
// not known and the last read failed, or ctx ended before the read did.
func (s *jwksSource) key(ctx context.Context, kid, alg string) (any, error) {
	snap := s.keys.Load()
	if time.Since(snap.read) < s.refresh {
		if k, ok := snap.set.find(kid, alg); ok {
			return k, nil
		}
	}
	var gaveUp error
	if done := s.startRead(snap); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			gaveUp = ctx.Err() // the read goes on, for the requests after this one
		}
	}
	if k, ok := s.keys.Load().set.find(kid, alg); ok {
		return k, nil // stale keys still verify while the provider cannot be reached
	}
	if gaveUp != nil {
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, gaveUp)
	}
	if err := s.lastError(); err != nil {
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, err)
	}
	return nil, errUnknownKey
}

// errUnknownKey: the token is signed by a key the provider does not publish.
var errUnknownKey = errors.New("unknown key")
