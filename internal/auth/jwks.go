package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// A JSON Web Key Set (RFC 7517) is how an identity provider publishes the public keys its
// tokens are signed with: {"keys": [{"kty": "RSA", "kid": "...", "n": "...", "e": "..."},
// {"kty": "EC", "kid": "...", "crv": "P-256", "x": "...", "y": "..."}]}, every number in
// unpadded base64url, big-endian (RFC 7518 §6). Only what verifying RS* and ES* signatures
// needs is read; other keys (symmetric ones, encryption keys, unknown types) are left out.

// minRSABits refuses RSA keys too short to trust (RFC 7518 §3.3 asks for 2048 bits or more).
const minRSABits = 2048

// jwk is one published key.
type jwk struct {
	Kid string
	Alg string // the one algorithm the key is for, when the provider says
	Key crypto.PublicKey
}

// keySet is the keys of one JWKS.
type keySet []jwk

// parseJWKS reads a JWKS. It fails when the document is not one, or holds no key msggate can
// verify with.
func parseJWKS(data []byte) (keySet, error) {
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %w", err)
	}
	var set keySet
	var skipped []error
	for i, raw := range doc.Keys {
		k, err := parseJWK(raw)
		switch {
		case err != nil:
			skipped = append(skipped, fmt.Errorf("key %d (kid %q): %w", i, str(raw, "kid"), err))
		case k.Key != nil:
			set = append(set, k)
		}
	}
	if len(set) == 0 {
		return nil, errors.Join(append([]error{fmt.Errorf("none of its %d keys is an RSA or EC signing key", len(doc.Keys))}, skipped...)...)
	}
	return set, nil
}

// parseJWK reads one key; a key that is not for signatures, or of a type msggate does not
// verify with, comes back empty without an error.
func parseJWK(raw map[string]any) (jwk, error) {
	k := jwk{Kid: str(raw, "kid"), Alg: str(raw, "alg")}
	if use := str(raw, "use"); use != "" && use != "sig" {
		return jwk{}, nil
	}
	switch str(raw, "kty") {
	case "RSA":
		n, err := number(raw, "n")
		if err != nil {
			return jwk{}, err
		}
		e, err := number(raw, "e")
		if err != nil {
			return jwk{}, err
		}
		if n.BitLen() < minRSABits {
			return jwk{}, fmt.Errorf("an RSA key of %d bits is too short (at least %d)", n.BitLen(), minRSABits)
		}
		if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
			return jwk{}, errors.New("the RSA exponent is not a usable odd number")
		}
		k.Key = &rsa.PublicKey{N: n, E: int(e.Int64())}
	case "EC":
		curve, ok := curves[str(raw, "crv")]
		if !ok {
			return jwk{}, fmt.Errorf("unknown curve %q", str(raw, "crv"))
		}
		size := (curve.Params().BitSize + 7) / 8
		x, err := coordinate(raw, "x", size)
		if err != nil {
			return jwk{}, err
		}
		y, err := coordinate(raw, "y", size)
		if err != nil {
			return jwk{}, err
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return jwk{}, fmt.Errorf("not a point of %s: %w", str(raw, "crv"), err)
		}
		k.Key = pub
	}
	return k, nil
}

// curves are the curves of ES256, ES384 and ES512.
var curves = map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}

func str(raw map[string]any, field string) string {
	s, _ := raw[field].(string)
	return s
}

// number decodes an unpadded base64url big-endian number.
func number(raw map[string]any, field string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(str(raw, field))
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("%q is not a base64url number", field)
	}
	return new(big.Int).SetBytes(b), nil
}

// coordinate decodes a curve coordinate to exactly size bytes. RFC 7518 wants it full size;
// one shortened by leading zeros is padded back rather than refused.
func coordinate(raw map[string]any, field string, size int) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(str(raw, field))
	if err != nil || len(b) == 0 || len(b) > size {
		return nil, fmt.Errorf("%q is not a coordinate of %d bytes in base64url", field, size)
	}
	return append(make([]byte, size-len(b)), b...), nil
}

// verifies reports whether key k can verify a signature of algorithm alg: the key's type and
// curve fit the algorithm, and the key names no other algorithm.
func (k jwk) verifies(alg string) bool {
	if k.Alg != "" && k.Alg != alg {
		return false
	}
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		return alg == "RS256" || alg == "RS384" || alg == "RS512"
	case *ecdsa.PublicKey:
		want := map[string]string{"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}[alg]
		return want != "" && key.Curve.Params().Name == want
	}
	return false
}

// find returns the key that verifies a token signed with alg by the key kid ("" when the token
// names none: then the set's only key for alg, if it has exactly one).
func (s keySet) find(kid, alg string) (crypto.PublicKey, bool) {
	var found crypto.PublicKey
	n := 0
	for _, k := range s {
		if (kid == "" || k.Kid == kid) && k.verifies(alg) {
			found = k.Key
			n++
		}
	}
	if n != 1 {
		return nil, false
	}
	return found, true
}
