import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { Registry } from 'prom-client';
import { payloadKeys } from '../../src/adapters/secrets/payload-keys';
import { loadApiConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startOpsServer, type OpsServer } from '../../src/observability/ops-server';
import { createCodecEndpoint } from '../../src/temporal/codec-endpoint';
import { createPayloadCodec } from '../../src/temporal/data-converter';

// The requests the Temporal Web UI makes to the codec endpoint (temporalio/ui,
// src/lib/services/data-encoder.ts): from the operator's browser, cross-origin, a preflight and then
// `POST <endpoint>/decode` with Content-Type and X-Namespace; "Pass access token" adds
// `Authorization: Bearer <the user's access token>`, "Include cross-origin credentials" sends the
// browser's cookies. Against the real codec server and a real JWKS server (docs/decisions.md D59).

const UI = 'http://localhost:8233';
const TOKEN = `codec-${randomBytes(12).toString('hex')}`;
const ISSUER = 'https://login.example/';
const AUDIENCE = 'https://saas-api.example';
const CPF = '52998224725';

describe('codec endpoint as the Web UI calls it', () => {
  const codec = createPayloadCodec(payloadKeys(randomBytes(32).toString('base64')))!;
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let jwksServer: Server;
  let jwksOrigin: string;
  /** Requests the JWKS server answered, by path. */
  const jwksRequests: string[] = [];
  let server: OpsServer;
  const servers: OpsServer[] = [];
  let base: string;
  let encrypted: Payload[];

  /** A codec server of its own (its own, empty, JWKS cache) taking keys from `jwksPath`. */
  const startCodec = async (jwksPath: string) => {
    const started = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: new Registry(),
      handlers: [
        createCodecEndpoint({
          codec,
          authToken: TOKEN,
          oidc: {
            jwksUrl: `${jwksOrigin}${jwksPath}`,
            issuer: ISSUER,
            audience: AUDIENCE,
            allowedUsers: ['ops@payouts.example'],
          },
          requireAuthToken: true,
          corsOrigins: [UI],
          logger: createLogger({ level: 'silent', name: 't' }),
        }),
      ],
      logger: createLogger({ level: 'silent', name: 't' }),
    });
    servers.push(started);
    return started;
  };

  beforeAll(async () => {
    jwksServer = createServer((req, res) => {
      jwksRequests.push(req.url ?? '');
      // Elsewhere, then here: a fetch that followed it would find the right keys.
      if (req.url === '/moved') {
        res.writeHead(302, { location: '/.well-known/jwks.json' });
        res.end();
        return;
      }
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256' }] }),
        );
      };
      // An issuer that takes its time: requests that come meanwhile wait for the same load.
      if (req.url === '/slow') setTimeout(answer, 300);
      else answer();
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    jwksOrigin = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}`;
    server = await startCodec('/.well-known/jwks.json');
    base = `http://127.0.0.1:${server.port}/codec`;
    encrypted = await codec.encode([defaultPayloadConverter.toPayload({ pixKey: CPF })]);
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
    await new Promise((resolve) => jwksServer?.close(resolve));
  });

  const body = () =>
    JSON.stringify({
      payloads: encrypted.map((p) => ({
        metadata: Object.fromEntries(
          Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString('base64')]),
        ),
        data: Buffer.from(p.data ?? []).toString('base64'),
      })),
    });
  /** The UI's request, as its fetch sends it (the browser adds Origin, and Cookie with credentials). */
  const decode = (extra: Record<string, string> = {}, at = base) =>
    fetch(`${at}/decode`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Namespace': 'payouts', Origin: UI, ...extra },
      body: body(),
    });
  const decodedPixKey = async (res: Response) => {
    const json = (await res.json()) as { payloads: { data: string }[] };
    return (JSON.parse(Buffer.from(json.payloads[0]!.data, 'base64').toString()) as { pixKey: string })
      .pixKey;
  };
  const preflight = (requestHeaders: string) =>
    fetch(`${base}/decode`, {
      method: 'OPTIONS',
      headers: {
        Origin: UI,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': requestHeaders,
      },
    });
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  /** A JWT signed with `key`; `header` replaces the usual one (a test's malformed header). */
  const jwt = (claims: unknown, key: KeyObject = privateKey, kid = 'k1', header?: unknown) => {
    const signed = `${part(header === undefined ? { alg: 'RS256', typ: 'JWT', kid } : header)}.${part(claims)}`;
    return `${signed}.${sign('sha256', Buffer.from(signed), key).toString('base64url')}`;
  };
  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  const claims = (over: Record<string, unknown> = {}) => ({
    iss: ISSUER,
    aud: [AUDIENCE, `${ISSUER}userinfo`],
    sub: 'auth0|123',
    email: 'ops@payouts.example',
    email_verified: true,
    exp: Math.floor(Date.now() / 1000) + 600,
    ...over,
  });

  it('answers both preflights (with credentials, and with the access token header) for the UI origin', async () => {
    for (const headers of ['content-type,x-namespace', 'authorization,content-type,x-namespace']) {
      const res = await preflight(headers);
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(UI);
      expect(res.headers.get('access-control-allow-credentials')).toBe('true');
      const allowed = (res.headers.get('access-control-allow-headers') ?? '').split(/,\s*/);
      for (const h of headers.split(',')) expect(allowed).toContain(h);
    }
  });

  it('compose: refuses the UI until the browser signs in at /codec/login, then decodes with its cookie', async () => {
    const refused = await decode();
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(UI);

    const page = await fetch(`${base}/login`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post">');
    const wrong = await fetch(`${base}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'not-the-token' }).toString(),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();

    const signedIn = await fetch(`${base}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: TOKEN }).toString(),
    });
    expect(signedIn.status).toBe(200);
    const setCookie = signedIn.headers.get('set-cookie')!;
    expect(setCookie).toMatch(
      /^codec_session=\d+\.[\w-]+; Path=\/codec; HttpOnly; SameSite=Strict; Max-Age=28800$/,
    );
    expect(setCookie).not.toContain(TOKEN);
    const cookie = setCookie.split(';')[0]!;

    const ok = await decode({ Cookie: cookie });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true');
    expect(await decodedPixKey(ok)).toBe(CPF);
    // A forged or expired session is no session.
    const [, expires, mac] = /^codec_session=(\d+)\.(.+)$/.exec(cookie)!;
    expect((await decode({ Cookie: `codec_session=${Number(expires) + 3600}.${mac}` })).status).toBe(401);
    expect((await decode({ Cookie: `codec_session=1.${mac}` })).status).toBe(401);
  });

  it("OIDC UI, Temporal Cloud's included: decodes for an allowed user's access token, and only then", async () => {
    const ok = await decode(bearer(jwt(claims())));
    expect(ok.status).toBe(200);
    expect(await decodedPixKey(ok)).toBe(CPF);

    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    for (const token of [
      jwt(claims({ email: 'someone@else.example', sub: 'auth0|999' })),
      jwt(claims({ exp: Math.floor(Date.now() / 1000) - 120 })),
      jwt(claims({ iss: 'https://other.example/' })),
      jwt(claims({ aud: 'https://other-api.example' })),
      jwt(claims(), other),
      jwt(claims(), privateKey, 'unknown-kid'),
      `${jwt(claims())}x`,
    ]) {
      expect((await decode(bearer(token))).status).toBe(401);
    }
    // The CLI's static token still works.
    expect((await decode(bearer(TOKEN))).status).toBe(200);
  });

  it('matches an allowed user by email only when the issuer verified it', async () => {
    // sub is nobody allowed: only the email could let these in.
    for (const verified of [undefined, false, 'true', 1]) {
      const token = jwt(claims({ sub: 'auth0|456', email_verified: verified }));
      const res = await decode(bearer(token));
      expect({ verified, status: res.status }).toEqual({ verified, status: 401 });
    }
    expect((await decode(bearer(jwt(claims({ sub: 'auth0|456', email_verified: true }))))).status).toBe(200);
  });

  it('answers 401, not 500, for a header or claims that are not objects, and for odd algorithms and key ids', async () => {
    for (const token of [
      jwt(claims(), privateKey, 'k1', null),
      jwt(claims(), privateKey, 'k1', [1]),
      jwt(claims(), privateKey, 'k1', 'RS256'),
      jwt(null),
      jwt(42),
      // Names an Object.prototype property, not an algorithm of ours.
      jwt(claims(), privateKey, 'k1', { alg: '__proto__', kid: 'k1' }),
      jwt(claims(), privateKey, 'k1', { alg: 'toString', kid: 'k1' }),
      jwt(claims(), privateKey, 'k1', { alg: 'constructor', kid: 'k1' }),
      jwt(claims(), privateKey, 'k1', { alg: ['RS256'], kid: 'k1' }),
      jwt(claims(), privateKey, 'k1', { alg: 'none', kid: 'k1' }),
      jwt(claims(), privateKey, 'k1', { alg: { toString: 1 }, kid: 'k1' }),
      jwt(claims({ sub: { toString: 1 }, email: 'someone@else.example' })),
      jwt(claims(), privateKey, 'k1', { alg: 'RS256', kid: { toString: 'k1' } }),
    ]) {
      const res = await decode(bearer(token));
      expect({ token, status: res.status }).toEqual({ token, status: 401 });
    }
    // The well-formed token still passes (nothing above broke the server or its key cache).
    expect((await decode(bearer(jwt(claims())))).status).toBe(200);
  });

  it('the first requests after a start share one load of the issuer keys, none refused meanwhile', async () => {
    const fresh = await startCodec('/slow');
    const at = `http://127.0.0.1:${fresh.port}/codec`;
    const before = jwksRequests.filter((p) => p === '/slow').length;
    const statuses = await Promise.all(
      Array.from({ length: 6 }, () => decode(bearer(jwt(claims())), at).then((r) => r.status)),
    );
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    expect(jwksRequests.filter((p) => p === '/slow').length - before).toBe(1);
  });

  it('does not follow a redirect of the JWKS URL: the keys come from the URL configured', async () => {
    const redirected = await startCodec('/moved');
    const at = `http://127.0.0.1:${redirected.port}/codec`;
    expect((await decode(bearer(jwt(claims())), at)).status).toBe(401);
    expect(jwksRequests).toContain('/moved');
    // The CLI's token is no JWKS matter.
    expect((await decode(bearer(TOKEN), at)).status).toBe(200);
  });

  describe('configuration (CODEC_OIDC_*)', () => {
    const oidc = {
      CODEC_OIDC_JWKS_URL: 'https://login.example/.well-known/jwks.json',
      CODEC_OIDC_ISSUER: ISSUER,
      CODEC_OIDC_ALLOWED_USERS: 'ops@payouts.example',
    };
    const production = { NODE_ENV: 'production', PAYLOAD_ENCRYPTION_KEY: randomBytes(32).toString('base64') };

    it('refuses a JWKS URL that is not https', () => {
      expect(() => loadApiConfig({ ...oidc, CODEC_OIDC_JWKS_URL: 'http://login.example/jwks.json' })).toThrow(
        /CODEC_OIDC_JWKS_URL must be an https URL/,
      );
      expect(loadApiConfig(oidc).CODEC_OIDC_JWKS_URL).toBe(oidc.CODEC_OIDC_JWKS_URL);
    });

    it('production with OIDC needs an audience', () => {
      expect(() => loadApiConfig({ ...production, ...oidc })).toThrow(
        /CODEC_OIDC_AUDIENCE is required with CODEC_OIDC_JWKS_URL when NODE_ENV=production/,
      );
      expect(
        loadApiConfig({ ...production, ...oidc, CODEC_OIDC_AUDIENCE: AUDIENCE }).CODEC_OIDC_AUDIENCE,
      ).toBe(AUDIENCE);
      // Outside production, and in production without OIDC, none is needed.
      expect(() => loadApiConfig(oidc)).not.toThrow();
      expect(() => loadApiConfig(production)).not.toThrow();
    });
  });
});
