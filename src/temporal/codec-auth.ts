import {
  createHash,
  createHmac,
  createPublicKey,
  timingSafeEqual,
  verify,
  type KeyObject,
} from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * Who may use the codec endpoint (codec-endpoint.ts), by what each client can send
 * (docs/decisions.md D59):
 * - the CLI and scripts: `Authorization: Bearer <CODEC_AUTH_TOKEN>`;
 * - a Web UI behind OIDC, Temporal Cloud's included (its codec setting "Pass access token"): the
 *   user's access token, a JWT checked against the issuer's keys (JWKS), issuer, audience, expiry,
 *   and a list of users who may read payouts: any Temporal Cloud user holds a valid token;
 * - a Web UI without login (docker compose): the browser's session cookie, set once by signing in
 *   at <codec>/login with CODEC_AUTH_TOKEN; the UI sends it with "Include cross-origin
 *   credentials" (TEMPORAL_CODEC_INCLUDE_CREDENTIALS). SameSite=Strict: sent only from the same
 *   site, which localhost:8233 and localhost:9464 are (ports do not count).
 */

export interface CodecOidc {
  jwksUrl: string;
  issuer: string;
  audience?: string;
  /** `sub` or `email` claims allowed (an email only with `email_verified: true`); an empty list allows nobody. */
  allowedUsers: readonly string[];
}

export interface CodecAuthOptions {
  token?: string;
  oidc?: CodecOidc;
  /** How long a browser session lasts. */
  sessionSeconds?: number;
  now?: () => number;
  fetchJwks?: (url: string) => Promise<unknown>;
}

export const SESSION_COOKIE = 'codec_session';
const DEFAULT_SESSION_SECONDS = 8 * 3600;
const CLOCK_LEEWAY_SECONDS = 60;
const JWKS_REFRESH_MS = 5 * 60_000;

export type CodecVerdict = { ok: true } | { ok: false; reason: string };

export interface CodecAuth {
  check(req: IncomingMessage): Promise<CodecVerdict>;
  /** A session cookie when `presented` is the token; undefined otherwise. */
  sessionCookie(presented: string, secure: boolean): string | undefined;
  readonly sessions: boolean;
}

export function createCodecAuth(opts: CodecAuthOptions): CodecAuth {
  const now = opts.now ?? Date.now;
  const sessionSeconds = opts.sessionSeconds ?? DEFAULT_SESSION_SECONDS;
  const tokenDigest = opts.token ? digest(`Bearer ${opts.token}`) : undefined;
  // A key of its own for sessions: a cookie is never the token, nor something it can be derived from.
  const sessionKey = opts.token
    ? createHash('sha256').update(`codec-session:${opts.token}`).digest()
    : undefined;
  const jwks = opts.oidc ? jwksCache(opts.oidc.jwksUrl, opts.fetchJwks ?? fetchJson, now) : undefined;

  const sessionMac = (expires: string) =>
    createHmac('sha256', sessionKey!).update(expires).digest('base64url');

  const validSession = (req: IncomingMessage): boolean => {
    if (!sessionKey) return false;
    const value = cookieOf(req, SESSION_COOKIE);
    const [expires, mac] = value?.split('.') ?? [];
    if (!expires || !mac || !/^[0-9]+$/.test(expires) || Number(expires) * 1000 <= now()) return false;
    return safeEqual(Buffer.from(mac), Buffer.from(sessionMac(expires)));
  };

  return {
    sessions: sessionKey !== undefined,
    sessionCookie(presented, secure) {
      if (!tokenDigest || !timingSafeEqual(digest(`Bearer ${presented}`), tokenDigest)) return undefined;
      const expires = String(Math.floor(now() / 1000) + sessionSeconds);
      return (
        `${SESSION_COOKIE}=${expires}.${sessionMac(expires)}; Path=/codec; HttpOnly; SameSite=Strict; ` +
        `Max-Age=${sessionSeconds}${secure ? '; Secure' : ''}`
      );
    },
    async check(req) {
      if (!tokenDigest && !opts.oidc) return { ok: true };
      const authorization = req.headers.authorization ?? '';
      if (tokenDigest && timingSafeEqual(digest(authorization), tokenDigest)) return { ok: true };
      if (validSession(req)) return { ok: true };
      const bearer = /^Bearer (\S+\.\S+\.\S+)$/.exec(authorization)?.[1];
      if (opts.oidc && jwks && bearer) return verifyAccessToken(bearer, opts.oidc, jwks, now);
      return { ok: false, reason: 'no valid token, session or access token' };
    },
  };
}

function digest(text: string): Buffer {
  // Hashing first gives equal lengths, which timingSafeEqual requires, whatever the client sent.
  return createHash('sha256').update(text).digest();
}

function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

async function fetchJson(url: string): Promise<unknown> {
  // A redirect is refused, not followed: the keys come from the URL configured, nowhere it points to.
  const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(5_000) });
  if (!res.ok) throw new Error(`JWKS answered HTTP ${res.status}`);
  return res.json();
}

interface Jwks {
  key(kid: string | undefined): Promise<KeyObject | undefined>;
}

/**
 * The issuer's keys, fetched again for a key id it does not know (a key rotation), at most every 5
 * minutes. Requests that want the keys while a load is under way wait for that load: the first
 * requests after a start come together (a Web UI page decodes many payloads at once), and one that
 * found the cache "fresh" but still empty would be refused a valid token.
 */
function jwksCache(url: string, load: (url: string) => Promise<unknown>, now: () => number): Jwks {
  let keys = new Map<string | undefined, KeyObject>();
  let fetchedAt = -Infinity;
  let loading: Promise<void> | undefined;
  const refresh = async () => {
    const body = (await load(url)) as { keys?: unknown } | null;
    const next = new Map<string | undefined, KeyObject>();
    for (const jwk of Array.isArray(body?.keys) ? (body.keys as unknown[]) : []) {
      try {
        next.set((jwk as { kid?: string }).kid, createPublicKey({ key: jwk as never, format: 'jwk' }));
      } catch {
        // A key of a type Node cannot read signs nothing we accept.
      }
    }
    keys = next;
  };
  return {
    async key(kid) {
      if (!keys.has(kid) && (loading || now() - fetchedAt > JWKS_REFRESH_MS)) {
        // Failed loads count too: an issuer that is down is asked again in 5 minutes, not per request.
        loading ??= refresh().finally(() => {
          fetchedAt = now();
          loading = undefined;
        });
        await loading;
      }
      return keys.get(kid);
    },
  };
}

// Looked up with Object.hasOwn only: `__proto__` or `toString` is no algorithm.
const ALGORITHMS: Record<string, { hash: string; ec: boolean }> = {
  RS256: { hash: 'sha256', ec: false },
  ES256: { hash: 'sha256', ec: true },
};

async function verifyAccessToken(
  jwt: string,
  oidc: CodecOidc,
  jwks: Jwks,
  now: () => number,
): Promise<CodecVerdict> {
  const [head, body, signature] = jwt.split('.') as [string, string, string];
  let header: Record<string, unknown>;
  let claims: Record<string, unknown>;
  try {
    header = jsonObject(head);
    claims = jsonObject(body);
  } catch {
    return { ok: false, reason: 'access token is not a JWT' };
  }
  const alg =
    typeof header.alg === 'string' && Object.hasOwn(ALGORITHMS, header.alg)
      ? ALGORITHMS[header.alg]
      : undefined;
  if (!alg) return { ok: false, reason: `access token algorithm ${shown(header.alg)} is not accepted` };
  if (header.kid !== undefined && typeof header.kid !== 'string')
    return { ok: false, reason: 'access token key id is not a string' };
  let key: KeyObject | undefined;
  try {
    key = await jwks.key(header.kid);
  } catch (err) {
    // An unknown is never a yes: without the issuer's keys nobody is let in.
    return {
      ok: false,
      reason: `cannot read the issuer's keys: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (!key) return { ok: false, reason: 'access token signed by an unknown key' };
  const signed = verify(
    alg.hash,
    Buffer.from(`${head}.${body}`),
    alg.ec ? { key, dsaEncoding: 'ieee-p1363' } : key,
    Buffer.from(signature, 'base64url'),
  );
  if (!signed) return { ok: false, reason: 'access token signature is invalid' };
  const seconds = now() / 1000;
  if (typeof claims.exp !== 'number' || claims.exp + CLOCK_LEEWAY_SECONDS < seconds)
    return { ok: false, reason: 'access token has expired' };
  if (typeof claims.nbf === 'number' && claims.nbf - CLOCK_LEEWAY_SECONDS > seconds)
    return { ok: false, reason: 'access token is not valid yet' };
  if (claims.iss !== oidc.issuer) return { ok: false, reason: 'access token is from another issuer' };
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (oidc.audience !== undefined && !audiences.includes(oidc.audience))
    return { ok: false, reason: 'access token is for another audience' };
  // An email names a user only once the issuer has verified it: most issuers let anybody sign up
  // with any address, so an unverified one could be an allowed operator's.
  const names = claims.email_verified === true ? [claims.sub, claims.email] : [claims.sub];
  const user = names.find((v) => typeof v === 'string' && oidc.allowedUsers.includes(v));
  if (!user)
    return {
      ok: false,
      reason: `user ${shown(claims.sub)} may not read payouts (CODEC_OIDC_ALLOWED_USERS)`,
    };
  return { ok: true };
}

/** A JWT part's JSON, which must be an object: `null`, a number or an array is no header or claims. */
function jsonObject(part: string): Record<string, unknown> {
  const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString());
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
  return value as Record<string, unknown>;
}

/**
 * A claim as a reason shows it. Not String(): a JSON object with a `toString` member that is no
 * function makes it throw, a 500 for what the client sent.
 */
function shown(value: unknown): string {
  return (typeof value === 'string' ? value : (JSON.stringify(value) ?? 'undefined')).slice(0, 100);
}
