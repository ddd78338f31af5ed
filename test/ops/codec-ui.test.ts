import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { Registry } from 'prom-client';
import { payloadKeys } from '../../src/adapters/secrets/payload-keys';
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
  let server: OpsServer;
  let base: string;
  let encrypted: Payload[];

  beforeAll(async () => {
    jwksServer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256' }] }),
      );
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/.well-known/jwks.json`;
    server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: new Registry(),
      handlers: [
        createCodecEndpoint({
          codec,
          authToken: TOKEN,
          oidc: { jwksUrl, issuer: ISSUER, audience: AUDIENCE, allowedUsers: ['ops@payouts.example'] },
          requireAuthToken: true,
          corsOrigins: [UI],
          logger: createLogger({ level: 'silent', name: 't' }),
        }),
      ],
      logger: createLogger({ level: 'silent', name: 't' }),
    });
    base = `http://127.0.0.1:${server.port}/codec`;
    encrypted = await codec.encode([defaultPayloadConverter.toPayload({ pixKey: CPF })]);
  });
  afterAll(async () => {
    await server?.close();
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
  const decode = (extra: Record<string, string> = {}) =>
    fetch(`${base}/decode`, {
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
  const jwt = (claims: Record<string, unknown>, key: KeyObject = privateKey, kid = 'k1') => {
    const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const signed = `${part({ alg: 'RS256', typ: 'JWT', kid })}.${part(claims)}`;
    return `${signed}.${sign('sha256', Buffer.from(signed), key).toString('base64url')}`;
  };
  const claims = (over: Record<string, unknown> = {}) => ({
    iss: ISSUER,
    aud: [AUDIENCE, `${ISSUER}userinfo`],
    sub: 'auth0|123',
    email: 'ops@payouts.example',
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
    const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
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
});
