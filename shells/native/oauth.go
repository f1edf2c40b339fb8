package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/grantwire/grantwire/hostabi"
)

// Purposes of requests, as the transport rule (op check_url) knows them.
const (
	purposeToken         = "token"
	purposeAuthorization = "authorization"
	purposeUserinfo      = "userinfo"
)

// maxBody bounds what is read from a provider's response.
const maxBody = 1 << 20

// oauthClient is the OAuth capability: x/oauth2 over an http.Client whose every request
// and redirect hop passes the core's transport rule first.
type oauthClient struct {
	s *Shell
}

var _ hostabi.OAuth = (*oauthClient)(nil)

// errRedirectRefused is returned from CheckRedirect: the hop is never requested.
type errRedirectRefused struct {
	status int
	reason string
}

func (e *errRedirectRefused) Error() string { return "redirect refused: " + e.reason }

// httpClient returns a client for one purpose. Redirects from the token endpoint are never
// followed (a 307 would replay the form with the code verifier, refresh token and client
// secret); other hops are followed only when the transport rule allows them.
func (o *oauthClient) httpClient(purpose string) *http.Client {
	return &http.Client{
		Timeout:   o.s.opts.HTTPTimeout,
		Transport: o.s.transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			status := 0
			if req.Response != nil {
				status = req.Response.StatusCode
			}
			if purpose == purposeToken {
				return &errRedirectRefused{status: status, reason: "the token endpoint redirected; token requests never follow redirects"}
			}
			if err := o.check(req.Context(), req.URL, purpose, len(via), via[len(via)-1].URL); err != nil {
				return &errRedirectRefused{status: status, reason: err.Error()}
			}
			return nil
		},
	}
}

// check applies the transport rule; without one, nothing is sent.
func (o *oauthClient) check(ctx context.Context, u *url.URL, purpose string, hop int, from *url.URL) error {
	if o.s.opts.CheckURL == nil {
		return ErrNoTransportRule
	}
	return o.s.opts.CheckURL(ctx, u, purpose, hop, from)
}

// refusedURL is the error of a URL the transport rule did not pass: "canceled" when the
// check stopped because ctx ended (the policy engine honours cancellation).
func refusedURL(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "canceled"
	}
	return "refused URL: " + cut(err.Error(), 200)
}

// config builds the x/oauth2 configuration of a connector and client.
func (o *oauthClient) config(c hostabi.Connector, client hostabi.Client, redirect string, scopes []string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     client.ID,
		ClientSecret: client.Secret,
		Endpoint: oauth2.Endpoint{
			AuthURL:   withTenant(c.AuthorizationURL, c.Tenant, client.Tenant),
			TokenURL:  withTenant(c.TokenURL, c.Tenant, client.Tenant),
			AuthStyle: oauth2.AuthStyleInParams,
		},
		RedirectURL: redirect,
		Scopes:      scopes,
	}
}

// withTenant puts the configured tenant into an endpoint: a "{tenant}" placeholder, or
// the catalog's default tenant as a path segment (login.microsoftonline.com/<tenant>/...).
func withTenant(endpoint, catalogTenant, tenant string) string {
	if tenant == "" {
		tenant = catalogTenant
	}
	if tenant == "" {
		return endpoint
	}
	esc := url.PathEscape(tenant)
	if strings.Contains(endpoint, "{tenant}") {
		return strings.ReplaceAll(endpoint, "{tenant}", esc)
	}
	if catalogTenant != "" && tenant != catalogTenant {
		return strings.Replace(endpoint, "/"+catalogTenant+"/", "/"+esc+"/", 1)
	}
	return endpoint
}

// Refresh implements hostabi.OAuth: the refresh_token grant (RFC 6749 §6).
func (o *oauthClient) Refresh(ctx context.Context, c hostabi.Connector, client hostabi.Client, refreshToken string) hostabi.TokenResponse {
	cfg := o.config(c, client, "", nil)
	if r, ok := o.checkToken(ctx, cfg.Endpoint.TokenURL); !ok {
		return r
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, o.httpClient(purposeToken))
	tok, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshToken}).Token()
	if err != nil {
		return tokenFailure(ctx, err)
	}
	return o.tokenResponse(tok, nil)
}

func (o *oauthClient) checkToken(ctx context.Context, tokenURL string) (hostabi.TokenResponse, bool) {
	u, err := url.Parse(tokenURL)
	if err != nil || tokenURL == "" {
		return hostabi.TokenResponse{Error: "the catalog has no valid token_url"}, false
	}
	if err := o.check(ctx, u, purposeToken, 0, nil); err != nil {
		return hostabi.TokenResponse{Error: refusedURL(ctx, err)}, false
	}
	return hostabi.TokenResponse{}, true
}

func (o *oauthClient) tokenResponse(tok *oauth2.Token, requested []string) hostabi.TokenResponse {
	r := hostabi.TokenResponse{Status: http.StatusOK, AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken}
	switch {
	case tok.ExpiresIn > 0:
		r.ExpiresIn = tok.ExpiresIn
	case !tok.Expiry.IsZero():
		r.ExpiresIn = int64(time.Until(tok.Expiry).Round(time.Second) / time.Second)
	}
	if s, ok := tok.Extra("scope").(string); ok && strings.TrimSpace(s) != "" {
		r.Scopes = strings.Fields(s)
	} else if requested != nil {
		r.Scopes = append([]string(nil), requested...) // RFC 6749 §5.1: omitted means as requested
	}
	return r
}

var oauthCode = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// errorCode keeps an OAuth error code only when it looks like one (RFC 6749 §5.2 codes
// are short ASCII words); anything else a server sent is not repeated.
func errorCode(code string) string {
	if oauthCode.MatchString(code) {
		return code
	}
	if code == "" {
		return ""
	}
	return "unrecognised_error"
}

// tokenFailure maps a failed token request to status and error code. Response bodies and
// error descriptions are never copied: they may echo what was sent.
func tokenFailure(ctx context.Context, err error) hostabi.TokenResponse {
	var re *oauth2.RetrieveError
	var rr *errRedirectRefused
	switch {
	case errors.As(err, &re):
		r := hostabi.TokenResponse{Error: errorCode(re.ErrorCode)}
		if re.Response != nil {
			r.Status = re.Response.StatusCode
		}
		// Some providers (GitHub) answer 200 with an error body; RFC 6749 §5.2 errors are
		// 400, so the core sees the code where it expects it.
		if r.Error != "" && r.Status >= 200 && r.Status < 300 {
			r.Status = http.StatusBadRequest
		}
		if r.Error == "" && r.Status == http.StatusOK {
			r.Error = "invalid_token_response"
		}
		return r
	case errors.As(err, &rr):
		return hostabi.TokenResponse{Status: rr.status, Error: "redirect_refused"}
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		if ctx.Err() != nil {
			return hostabi.TokenResponse{Error: "canceled"}
		}
		return hostabi.TokenResponse{Error: "timeout"}
	case errors.Is(err, context.Canceled):
		return hostabi.TokenResponse{Error: "canceled"}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return hostabi.TokenResponse{Error: "request_failed"}
	}
	// x/oauth2's own checks (missing access_token, malformed JSON) on a 2xx response.
	return hostabi.TokenResponse{Status: http.StatusOK, Error: "invalid_token_response"}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// userinfo returns the account email from the provider's userinfo endpoint ("" when the
// catalog names none or it does not answer with one).
func (o *oauthClient) userinfo(ctx context.Context, endpoint, accessToken string) string {
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil {
		return ""
	}
	if err := o.check(ctx, u, purposeUserinfo, 0, nil); err != nil {
		return ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return ""
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := o.httpClient(purposeUserinfo).Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	var info struct {
		Email             string `json:"email"`
		PreferredUsername string `json:"preferred_username"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&info) != nil {
		return ""
	}
	if info.Email != "" {
		return info.Email
	}
	if strings.Contains(info.PreferredUsername, "@") {
		return info.PreferredUsername
	}
	return ""
}

// Authorize implements hostabi.OAuth: PKCE S256 (RFC 7636) through a loopback redirect
// (RFC 8252 §7.3), then the code exchange.
func (o *oauthClient) Authorize(ctx context.Context, c hostabi.Connector, client hostabi.Client, scopes []string) hostabi.AuthResult {
	opts := o.s.opts
	if opts.Browser == nil && !opts.Interactive {
		return hostabi.AuthResult{Status: hostabi.AuthInteractiveRequired}
	}
	fail := func(msg string) hostabi.AuthResult {
		return hostabi.AuthResult{Status: hostabi.AuthError, Token: hostabi.TokenResponse{Error: msg}}
	}
	cfg := o.config(c, client, "", scopes)
	au, err := url.Parse(cfg.Endpoint.AuthURL)
	if err != nil || cfg.Endpoint.AuthURL == "" {
		return fail("the catalog has no valid authorization_url")
	}
	if err := o.check(ctx, au, purposeAuthorization, 0, nil); err != nil {
		return fail(refusedURL(ctx, err))
	}
	if r, ok := o.checkToken(ctx, cfg.Endpoint.TokenURL); !ok {
		return hostabi.AuthResult{Status: hostabi.AuthError, Token: r}
	}

	var stateBytes [32]byte
	if _, err := io.ReadFull(o.s.entropy, stateBytes[:]); err != nil {
		return fail("no entropy for the state parameter")
	}
	cb, err := listenCallback(stateBytes[:])
	if err != nil {
		return fail("could not listen on 127.0.0.1: " + cut(err.Error(), 120))
	}
	defer cb.close()
	cfg.RedirectURL = cb.redirectURI

	verifier := oauth2.GenerateVerifier()
	authOpts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	for _, k := range sortedKeys(c.AuthParams) {
		authOpts = append(authOpts, oauth2.SetAuthURLParam(k, c.AuthParams[k]))
	}
	authURL := cfg.AuthCodeURL(cb.state, authOpts...)

	prompt := opts.Prompt
	cb.setOnRefused(func(reason string) {
		fmt.Fprintf(prompt, "A callback was refused (%s); still waiting for the authorization.\n", reason)
	})
	opened := false
	if opts.Browser != nil {
		opened = opts.Browser(authURL) == nil
	}
	if !opened {
		if !opts.Interactive {
			return hostabi.AuthResult{Status: hostabi.AuthInteractiveRequired}
		}
		fmt.Fprintf(prompt, "To authorize %s, open this URL in a browser on this machine:\n\n  %s\n\nWaiting for the authorization (up to %s)...\n", c.ID, authURL, opts.AuthTimeout)
	} else {
		fmt.Fprintf(prompt, "Waiting for the %s authorization in your browser (up to %s). If no browser opened, open:\n\n  %s\n\n", c.ID, opts.AuthTimeout, authURL)
	}

	timer := time.NewTimer(opts.AuthTimeout)
	defer timer.Stop()
	var res callbackResult
	select {
	case res = <-cb.result:
	case <-ctx.Done():
		return fail("canceled")
	case <-timer.C:
		fmt.Fprintf(prompt, "No authorization arrived within %s. The URL to open was:\n  %s\n", opts.AuthTimeout, authURL)
		return fail("timeout")
	}
	switch {
	case res.err == "access_denied":
		return hostabi.AuthResult{Status: hostabi.AuthDenied, Token: hostabi.TokenResponse{Error: "access_denied"}}
	case res.err != "":
		return fail(res.err)
	}

	xctx := context.WithValue(ctx, oauth2.HTTPClient, o.httpClient(purposeToken))
	tok, err := cfg.Exchange(xctx, res.code, oauth2.VerifierOption(verifier))
	if err != nil {
		return hostabi.AuthResult{Status: hostabi.AuthError, Token: tokenFailure(ctx, err)}
	}
	r := o.tokenResponse(tok, scopes)
	r.Account = o.userinfo(ctx, c.UserinfoURL, tok.AccessToken)
	return hostabi.AuthResult{Status: hostabi.AuthOK, Token: r}
}
