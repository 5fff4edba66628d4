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
type jwksSource struct {
	location   string // a file path or an https:// URL
	client     *http.Client
	timeout    time.Duration
	refresh    time.Duration
	minRefresh time.Duration

	keys atomic.Pointer[keySnapshot]

	mu          sync.Mutex // held while reading the keys, so that waiters share one read
	lastAttempt time.Time
	lastErr     error
}

type keySnapshot struct {
	set  keySet
	read time.Time
}

// load reads the keys now, whatever their age.
func (s *jwksSource) load(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readLocked(ctx)
}

func (s *jwksSource) readLocked(ctx context.Context) error {
	s.lastAttempt = time.Now()
	set, err := s.fetch(ctx)
	if err != nil {
		s.lastErr = fmt.Errorf("read the identity provider's keys from %s: %w", s.location, err)
		return s.lastErr
	}
	s.lastErr = nil
	s.keys.Store(&keySnapshot{set: set, read: time.Now()})
	return nil
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
// kid is not among them, unless they were read less than minRefresh ago. It reports
// errKeysUnavailable (wrapping the cause) when the key is not known and the last read failed.
func (s *jwksSource) key(ctx context.Context, kid, alg string) (any, error) {
	snap := s.keys.Load()
	if time.Since(snap.read) < s.refresh {
		if k, ok := snap.set.find(kid, alg); ok {
			return k, nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.keys.Load(); cur != snap {
		snap = cur // another request read them meanwhile
	} else if time.Since(s.lastAttempt) >= s.minRefresh {
		_ = s.readLocked(ctx)
		snap = s.keys.Load()
	}
	if k, ok := snap.set.find(kid, alg); ok {
		return k, nil // stale keys still verify while the provider cannot be reached
	}
	if s.lastErr != nil {
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, s.lastErr)
	}
	return nil, errUnknownKey
}

// errUnknownKey: the token is signed by a key the provider does not publish.
var errUnknownKey = errors.New("unknown key")
