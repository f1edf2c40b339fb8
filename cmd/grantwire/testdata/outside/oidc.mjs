// oidc.mjs: the certified OpenID provider oidc-provider (pinned by
// scripts/outside/package-lock.json), configured for cmd/grantwire/outside_test.go (TestOutsideOIDC*):
// one confidential native client (loopback redirects on any port, RFC 8252 §7.3) allowed
// the authorization code, refresh token and device (RFC 8628) grants; refresh tokens
// issued for every grant and rotated on every use, so a rotated token used again is
// reuse: the provider revokes the whole grant (its own rule); revocation (RFC 7009) and
// DPoP (RFC 9449) on: offered, and required of the client when spec.dpopRequired (with
// the provider's nonce when spec.dpopNonce); a resource server when spec.resourceServer. The
// login and consent of every interaction are given at once (the test's HTTP client plays
// the user), for account "outside-user".
// Every token endpoint answer and every revoked grant is appended to spec.log as a JSON
// line, so the test can count refreshes and plant the issued tokens for its leak check.
//
//   node oidc.mjs '{"lib": "<dir of oidc-provider>", "port": 0, "clientId": "...",
//     "clientSecret": "...", "accessTTL": 30, "log": "<file>", "scopes": [...]}'
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const spec = JSON.parse(process.argv[2]);
const { default: Provider } = await import(pathToFileURL(join(spec.lib, 'lib/index.js')).href);
const issuer = `http://127.0.0.1:${spec.port}`;
const log = (o) => appendFileSync(spec.log, JSON.stringify(o) + '\n');

const provider = new Provider(issuer, {
  clients: [{
    client_id: spec.clientId,
    client_secret: spec.clientSecret,
    application_type: 'native',
    redirect_uris: ['http://127.0.0.1/callback'],
    grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
    response_types: ['code'],
    token_endpoint_auth_method: spec.authMethod ?? 'client_secret_post',
    dpop_bound_access_tokens: spec.dpopRequired === true,
  }],
  scopes: spec.scopes,
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: async () => ({ sub, email: 'outside-user@example.com', email_verified: true }),
  }),
  features: {
    devInteractions: { enabled: false },
    deviceFlow: { enabled: true },
    revocation: { enabled: true },
    // spec.dpopNonce: every DPoP proof at the provider must carry its nonce (RFC 9449 §8).
    dPoP: spec.dpopNonce
      ? { enabled: true, nonceSecret: Buffer.alloc(32, 7), requireNonce: () => true }
      : { enabled: true },
    // spec.resourceServer: any resource indicator (RFC 8707) names a resource server with
    // the scope spec.resourceServer.scope, whose access tokens are JWTs for it (with
    // cnf.jkt when DPoP-bound).
    ...(spec.resourceServer
      ? {
          resourceIndicators: {
            enabled: true,
            defaultResource: () => undefined,
            useGrantedResource: () => true,
            getResourceServerInfo: (_ctx, resource) => ({
              scope: spec.resourceServer.scope,
              audience: resource,
              accessTokenFormat: 'jwt',
              accessTokenTTL: spec.accessTTL ?? 3600,
            }),
          },
        }
      : {}),
  },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  ttl: { AccessToken: spec.accessTTL ?? 3600, DeviceCode: 600, Grant: 86400, RefreshToken: 86400, Interaction: 600, Session: 86400 },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: ['grantwire-outside-test-cookie-key'] },
  pkce: { required: () => true },
});
provider.on('grant.success', (ctx) => {
  const b = ctx.body ?? {};
  log({ ev: 'grant.success', grant_type: ctx.oidc.params.grant_type, access_token: b.access_token, refresh_token: b.refresh_token, scope: b.scope, token_type: b.token_type });
});
provider.on('grant.error', (ctx, err) => {
  log({ ev: 'grant.error', grant_type: ctx.oidc.params?.grant_type, error: err.error, description: err.error_description });
});
provider.on('grant.revoked', (_ctx, grantId) => log({ ev: 'grant.revoked', grant: grantId }));
provider.on('authorization.success', () => log({ ev: 'authorization.success' }));
provider.on('server_error', (_ctx, err) => log({ ev: 'server_error', error: String(err?.stack ?? err) }));

// The user: logs in as outside-user and consents to every scope asked for.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    return provider.interactionFinished(req, res, { login: { accountId: 'outside-user' } }, { mergeWithLastSubmission: false });
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const callback = provider.callback();
const server = createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((err) => {
      log({ ev: 'interaction.error', error: String(err?.stack ?? err) });
      res.statusCode = 500;
      res.end(String(err));
    });
    return;
  }
  callback(req, res);
});
server.listen(spec.port, '127.0.0.1', () => process.stdout.write(`oidc-provider listening on ${issuer}\n`));
