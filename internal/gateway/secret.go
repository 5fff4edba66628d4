package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// secretFile is the name, in the data directory, of the JWT secret generated on first use.
const secretFile = "jwt-secret"

// JWTSecret returns the configured secret or, on the embedded default, the one kept in the
// data directory (generated on first use), so that tokens survive restarts.
func JWTSecret(cfg Config) ([]byte, error) {
	if cfg.JWTSecret != "" {
		return []byte(cfg.JWTSecret), nil
	}
	path := SecretPath(cfg.DataDir)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return []byte(strings.TrimSpace(string(b))), nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	secret := hex.EncodeToString(b)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("keep the generated JWT secret: %w", err)
	}
	return []byte(secret), nil
}

// SecretPath is where a gateway with data directory dataDir keeps its generated secret.
func SecretPath(dataDir string) string { return filepath.Join(dataDir, secretFile) }
