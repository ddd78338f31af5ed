import { z } from 'zod';

import { describeIssues, invalid, parseJson, statusError, transportError } from '../http-answers';
import { ProviderError } from '../types';
import type { HttpsTransport } from './mtls-transport';

export interface TokenSourceOptions {
  transport: HttpsTransport;
  /** The institution's OAuth2 token endpoint, e.g. https://pix.example.com/oauth/token. */
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** Space-separated scopes to ask for; omitted: the client's default scopes. */
  scope?: string;
  now?: () => number;
}

export interface TokenSource {
  /** A token valid for at least the refresh margin; fetched once for all callers when needed. */
  get(): Promise<string>;
  /** The institution refused this token (401): the next get() fetches a new one. */
  invalidate(token: string): void;
}

function unusableToken(err: unknown): ProviderError {
  const message = err instanceof Error ? err.message : String(err);
  return new ProviderError(message, 'token_unavailable', true);
}

/** A token is replaced this long before it expires, so no call goes out with one about to lapse. */
const REFRESH_MARGIN_MS = 60_000;

const tokenBody = z.object({
  access_token: z.string().min(1).max(8192),
  token_type: z.string().regex(/^bearer$/i, 'a Bearer token'),
  // A number by RFC 6749; some institutions send it as a string of digits.
  expires_in: z.coerce.number().int().positive(),
});

/**
 * OAuth2 client credentials (RFC 6749 4.4) as API Pix institutions implement it: the client id and
 * secret in HTTP Basic, over the same mutual TLS as the API. The token is cached until shortly before
 * it expires; concurrent callers share one request; a token the API refuses is dropped at once.
 */
export function createTokenSource(opts: TokenSourceOptions): TokenSource {
  const now = opts.now ?? Date.now;
  // The secret, and the Basic credential it travels in, never reach an error text.
  const secrets = [
    opts.clientSecret,
    Buffer.from(`${opts.clientId}:${opts.clientSecret}`).toString('base64'),
  ];
  let cached: { token: string; refreshAt: number } | undefined;
  let inFlight: Promise<string> | undefined;

  async function fetchToken(): Promise<string> {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (opts.scope !== undefined) form.set('scope', opts.scope);
    const basic = Buffer.from(`${opts.clientId}:${opts.clientSecret}`).toString('base64');
    const requestedAt = now();
    let answer;
    try {
      answer = await opts.transport({
        method: 'POST',
        url: opts.tokenUrl,
        headers: {
          authorization: `Basic ${basic}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
      });
    } catch (err) {
      throw transportError('oauthToken', err, undefined);
    }
    if (answer.status < 200 || answer.status >= 300) {
      const err = statusError({ operation: 'oauthToken' }, answer.status, answer.text, secrets);
      // Without the HTTP status: the token endpoint's 400 (`invalid_client`) must not pass for the
      // API's answer to the call that needed the token. Refused credentials are final; the rest of
      // the classification (5xx, 429, timeouts retried) stands.
      const refused = answer.status === 400 || answer.status === 401 || answer.status === 403;
      throw new ProviderError(err.message, refused ? 'unauthorized' : err.code, !refused && err.retryable);
    }
    let parsed;
    try {
      parsed = tokenBody.safeParse(parseJson(answer.text, 'oauthToken'));
    } catch (err) {
      throw unusableToken(err);
    }
    // A 2xx that is no token (a gateway's maintenance page) says nothing about our credentials.
    if (!parsed.success) throw unusableToken(invalid('oauthToken', describeIssues(parsed.error)));
    const lifetimeMs = parsed.data.expires_in * 1000;
    // A token shorter-lived than twice the margin is used for half its life instead.
    const margin = Math.min(REFRESH_MARGIN_MS, lifetimeMs / 2);
    // From when it was asked for: the institution's clock started no later than that.
    cached = { token: parsed.data.access_token, refreshAt: requestedAt + lifetimeMs - margin };
    return parsed.data.access_token;
  }

  return {
    get() {
      if (cached !== undefined && now() < cached.refreshAt) return Promise.resolve(cached.token);
      inFlight ??= fetchToken().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    invalidate(token) {
      if (cached?.token === token) cached = undefined;
    },
  };
}
