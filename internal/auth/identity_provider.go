package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/msggate/msggate/internal/im"
)

// Defaults of IdentityProviderOptions.
const (
	// DefaultUserClaim is the claim that names the user.
	DefaultUserClaim = "sub"
	// DefaultClockSkew is how far in the future a token's nbf may lie: the provider's clock
	// may run ahead of the gateway's.
	DefaultClockSkew = time.Minute
	// DefaultJWKSTimeout bounds one read of the key set.
	DefaultJWKSTimeout = 5 * time.Second
	// DefaultJWKSRefresh is how old the keys may get before they are read again.
	DefaultJWKSRefresh = time.Hour
	// DefaultJWKSMinRefresh is the least time between two reads of the keys, however many
	// tokens name keys the set lacks.
	DefaultJWKSMinRefresh = 30 * time.Second
)

// DefaultAlgorithms are the signature algorithms accepted when none are configured.
var DefaultAlgorithms = []string{"RS256", "ES256"}

// asymmetricAlgorithms are those IdentityProviderOptions.Algorithms may name.
var asymmetricAlgorithms = []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512"}

// IdentityProviderOptions says whose tokens an IdentityProvider accepts. Every zero field but
// JWKS, Issuer and Audience takes its default.
type IdentityProviderOptions struct {
	// JWKS is where the provider publishes its keys: an https:// URL (its jwks_uri) or a
	// file. Required.
	JWKS string
	// Issuer must equal the token's iss. Required when JWKS is a URL, unless AnyIssuer: a
	// provider's keys sign the tokens of every issuer it hosts (every realm or tenant).
	Issuer string
	// Audience must be one of the token's aud. Required unless AnyAudience: a provider signs
	// the tokens of every application it serves with the same keys, so without it a token
	// minted for any other of them would sign in here.
	Audience string
	// AnyIssuer accepts tokens whatever their iss, when Issuer is empty: the operator says
	// every issuer of the key set is to be trusted.
	AnyIssuer bool
	// AnyAudience accepts tokens whatever their aud, when Audience is empty: the operator
	// says every token the key set signs is meant for msggate.
	AnyAudience bool
	// UserClaim names the claim whose value is the msggate user ID. Default DefaultUserClaim.
	UserClaim string
	// Algorithms are the signature algorithms accepted, among RS256, RS384, RS512, ES256,
	// ES384 and ES512. Default DefaultAlgorithms.
	Algorithms []string
	// ClockSkew is how far in the future nbf may lie. Default DefaultClockSkew.
	ClockSkew time.Duration
	// HTTPClient fetches the keys from a URL. Default a client of its own.
	HTTPClient *http.Client
	// Timeout bounds one read of the keys. Default DefaultJWKSTimeout.
	Timeout time.Duration
	// Refresh is how old the keys may get before they are read again. Default
	// DefaultJWKSRefresh.
	Refresh time.Duration
	// MinRefresh is the least time between two reads of the keys. Default
	// DefaultJWKSMinRefresh.
	MinRefresh time.Duration
	// Now is the clock tokens are checked against. Default time.Now.
	Now func() time.Time
}

// IdentityProvider authenticates tokens an identity provider (an OpenID Connect provider,
// say) signs with the keys it publishes as a JWKS. Its viewers are plain users: admin tokens
// come from msggate's own secret.
type IdentityProvider struct {
	opts IdentityProviderOptions
	keys *jwksSource
}

// ErrAudienceRequired and ErrIssuerRequired refuse options that would accept the tokens the
// provider signs for other applications, or for other issuers sharing its keys: an Audience
// is required unless AnyAudience, an Issuer (for a key set fetched from a URL) unless
// AnyIssuer.
var (
	ErrAudienceRequired = errors.New("an audience is required: the provider's keys sign the tokens of all its applications")
	ErrIssuerRequired   = errors.New("an issuer is required: a published key set may sign the tokens of several issuers")
)

// Check reports what makes the options unusable, without reading the keys.
func (opts IdentityProviderOptions) Check() error {
	switch {
	case opts.JWKS == "":
		return errors.New("an identity provider needs its JWKS: an https:// URL or a file")
	case strings.HasPrefix(opts.JWKS, "http://"):
		return fmt.Errorf("the JWKS URL %s must be https://: keys fetched in the clear could be anyone's", opts.JWKS)
	}
	for _, a := range opts.Algorithms {
		if !slices.Contains(asymmetricAlgorithms, a) {
			return fmt.Errorf("algorithm %q is not one of %s", a, strings.Join(asymmetricAlgorithms, ", "))
		}
	}
	var errs []error
	if opts.Audience == "" && !opts.AnyAudience {
		errs = append(errs, ErrAudienceRequired)
	}
	if opts.Issuer == "" && !opts.AnyIssuer && strings.HasPrefix(opts.JWKS, "https://") {
		errs = append(errs, ErrIssuerRequired)
	}
	return errors.Join(errs...)
}

// NewIdentityProvider checks the options and reads the provider's keys once, so that a
// misconfigured provider stops the start rather than every request.
func NewIdentityProvider(ctx context.Context, opts IdentityProviderOptions) (*IdentityProvider, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	if opts.UserClaim == "" {
		opts.UserClaim = DefaultUserClaim
	}
	if len(opts.Algorithms) == 0 {
		opts.Algorithms = DefaultAlgorithms
	}
	if opts.ClockSkew == 0 {
		opts.ClockSkew = DefaultClockSkew
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultJWKSTimeout
	}
	if opts.Refresh == 0 {
		opts.Refresh = DefaultJWKSRefresh
	}
	if opts.MinRefresh == 0 {
		opts.MinRefresh = DefaultJWKSMinRefresh
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &IdentityProvider{opts: opts, keys: &jwksSource{location: opts.JWKS, client: opts.HTTPClient,
		timeout: opts.Timeout, refresh: opts.Refresh, minRefresh: opts.MinRefresh}}
	if err := p.keys.load(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Authenticate verifies token: an algorithm among those configured (never "none", never one
// with a shared secret), a signature by a key the provider publishes, an exp that has not
// passed (required), an nbf at most the clock skew ahead, the issuer and audience (unless
// the options accept any), and a valid user ID in the user claim. Every refusal is EUNAUTHENTICATED; keys
// that could not be read are EUNAVAILABLE, since the token may well be good.
func (p *IdentityProvider) Authenticate(ctx context.Context, token string) (Viewer, error) {
	refuse := func(format string, args ...any) (Viewer, error) {
		return Viewer{}, im.Errorf(im.EUNAUTHENTICATED, format, args...)
	}
	switch alg := headerAlg(token); {
	case alg == "":
		return refuse("the token is not valid")
	case !slices.Contains(p.opts.Algorithms, alg):
		return refuse("tokens signed with %q are not accepted", alg)
	}
	claims := jwt.MapClaims{}
	var keyErr error
	_, err := jwt.NewParser(jwt.WithValidMethods(p.opts.Algorithms), jwt.WithoutClaimsValidation()).
		ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
			kid, _ := t.Header["kid"].(string)
			k, err := p.keys.key(ctx, kid, t.Method.Alg())
			keyErr = err
			return k, err
		})
	switch {
	case errors.Is(keyErr, errKeysUnavailable):
		return Viewer{}, im.Unavailable("the identity provider's key set", keyErr)
	case errors.Is(keyErr, errUnknownKey):
		return refuse("the token is signed by a key the identity provider does not publish")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return refuse("the token's signature is not valid")
	case err != nil:
		return refuse("the token is not valid")
	}

	now := p.opts.Now()
	exp, err := claims.GetExpirationTime()
	switch {
	case err != nil:
		return refuse("the token's exp is not a time")
	case exp == nil:
		return refuse("the token has no expiry (exp)")
	case !now.Before(exp.Time):
		return refuse("the token has expired")
	}
	if nbf, err := claims.GetNotBefore(); err != nil {
		return refuse("the token's nbf is not a time")
	} else if nbf != nil && nbf.After(now.Add(p.opts.ClockSkew)) {
		return refuse("the token is not valid yet")
	}
	if want := p.opts.Issuer; want != "" {
		if iss, _ := claims.GetIssuer(); iss != want {
			return refuse("the token was issued by another issuer")
		}
	}
	if want := p.opts.Audience; want != "" {
		if aud, _ := claims.GetAudience(); !slices.Contains(aud, want) {
			return refuse("the token is meant for another audience")
		}
	}
	user, _ := claims[p.opts.UserClaim].(string)
	if im.ValidateID("user ID", user) != nil {
		return refuse("the token's %s claim names no valid user", p.opts.UserClaim)
	}
	return Viewer{UserID: user, Expires: exp.Time}, nil
}

// headerAlg reads the alg a token's header names, without verifying anything.
func headerAlg(token string) string {
	head, _, ok := strings.Cut(token, ".")
	if !ok {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.Alg
}

// WithIdentityProvider authenticates msggate's own tokens with own and every other token with
// p: the token's header decides, by its algorithm (HS256 is msggate's own; an asymmetric one
// is the provider's). A token that claims to be one kind is never checked as the other, so a
// token cannot pass one check by confusing it with the other's keys.
func WithIdentityProvider(own Authenticator, p *IdentityProvider) Authenticator {
	return composite{own: own, idp: p}
}

type composite struct {
	own Authenticator
	idp *IdentityProvider
}

func (c composite) Authenticate(ctx context.Context, token string) (Viewer, error) {
	if headerAlg(token) == jwt.SigningMethodHS256.Alg() {
		return c.own.Authenticate(ctx, token)
	}
	return c.idp.Authenticate(ctx, token)
}
