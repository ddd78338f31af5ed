import { API_ERRORS, type HttpError } from '../errors';
import { CALLBACK_OPERATIONS } from './callback-operations';
import { IDEMPOTENCY_KEY_MESSAGE } from '../payouts/payout.schemas';

/**
 * The words of the API's reference that no route schema carries: the headers every answer may have,
 * what each status code means on each operation, and each operation's id, tag, description and
 * example (docs/api.md, docs/decisions.md D13). describe.ts adds them to the generated document.
 */

export const RETRY_AFTER = {
  'Retry-After': {
    description: 'Seconds to wait before retrying (always 60)',
    schema: { type: 'integer', examples: [60] },
  },
};
/** The 503s of a request that needs a rate: every refusal but the provider's slow charge says when to retry. */
export const RETRY_AFTER_503 = {
  'Retry-After': {
    description:
      'Seconds to wait before retrying: 5 for an unavailable quote or screening, 60 for a stale price feed or a ' +
      'treasury that cannot send (absent on `payment provider unavailable, retry later`)',
    schema: { type: 'integer', examples: [5, 60] },
  },
};
/** The 503 of PUT /v1/callback: the host's DNS did not answer in time. */
export const RETRY_AFTER_CALLBACK_DNS = {
  'Retry-After': {
    description: 'Seconds to wait before retrying (5)',
    schema: { type: 'integer', examples: [5] },
  },
};
export const REQUEST_ID = {
  'X-Request-Id': {
    description: 'Id of this request in our logs: yours when you sent a usable one, else generated',
    schema: { type: 'string', examples: ['3f9c1e7a-8b2d-4c5e-9f0a-1b2c3d4e5f6a'] },
  },
};

/** A message of the api's one table of errors, quoted. */
const quoted = (error: HttpError) => `\`${error.message}\``;

/** Every status any route may answer, with its meaning; exact messages where they are fixed. */
export const STATUS_MEANING: Record<string, string> = {
  '200': 'OK',
  '201': 'Created',
  '400':
    'Invalid request; the message names the field at fault (e.g. `amount_brl must be > 0`, ' +
    `\`receiver_wallet is required\`, \`pix_key is not a valid CPF key\`), or ${quoted(API_ERRORS.invalidJsonBody())}`,
  '401': `Missing API key (${quoted(API_ERRORS.missingApiKey())}) or invalid/disabled key (${quoted(API_ERRORS.invalidApiKey())})`,
  '404': quoted(API_ERRORS.notFound()),
  '409': quoted(API_ERRORS.idempotencyConflict()),
  '413': `Body over 16 KiB: ${quoted(API_ERRORS.bodyTooLarge())}`,
  '415': quoted(API_ERRORS.unsupportedMediaType()),
  '422': 'The request is well formed but refused on its merits (see the operation)',
  '429':
    `Rate limit exceeded: ${quoted(API_ERRORS.rateLimited())}, with \`Retry-After: 60\`. Counted per ` +
    'API key, and per client address for failed API keys (a valid key is never refused by the latter)',
  '500': `Unexpected error: ${quoted(API_ERRORS.internalError())} (no details are ever returned; quote X-Request-Id to support)`,
  '502': `The payment provider could not create the PIX charge: ${quoted(API_ERRORS.chargeRefused())}`,
  '503':
    `Temporarily unavailable, retry later: no exchange rate (${quoted(API_ERRORS.quoteUnavailable())}, or ` +
    `${quoted(API_ERRORS.quoteStale())} when its price feed is stale, both with \`Retry-After\`) or ` +
    `the provider is slow to create the charge (${quoted(API_ERRORS.providerUnavailable())})`,
};

/** The operations that honour an Idempotency-Key header, and what a repeat does there. */
export const IDEMPOTENCY_KEY_MEANING: Record<string, string> = {
  'post /v1/payouts':
    'Your opaque id for this payout (e.g. your order id), scoped to your partner account and ' +
    'valid 24 h: a repeat returns the original payout instead of creating another.',
  'post /v1/payouts/{id}/cancel':
    'Your opaque id for this cancel: a repeat of a cancel that succeeded answers 200 with the ' +
    'payout and `Idempotent-Replayed: true` instead of 409.',
};

export const PATH_PARAMETERS: Record<string, string> = {
  id: 'The payout id (UUID) returned by POST /v1/payouts',
  provider: 'The payment provider name this service is configured for (PROVIDER_NAME)',
};

export const QUERY_PARAMETERS: Record<string, string> = {
  limit: 'Items per page, 1-100 (default 20)',
  starting_after: 'The `id` of the last payout of the previous page: this page starts after it',
  status: 'Only payouts in this status: PENDING, PROCESSING, COMPLETED or FAILED (any case)',
  'created_at[gte]':
    'Only payouts created at or after this instant: ISO 8601 with seconds and a time zone ' +
    '(e.g. `2026-01-31T00:00:00Z`; percent-encode a `+` offset as `%2B`), or Unix seconds',
  'created_at[lt]': 'Only payouts created before this instant, in the form of `created_at[gte]`',
  amount_brl: 'The BRL amount, as in the body of POST /v1/payouts: > 0, at most 2 decimals (e.g. 100.50)',
};

/** The QR code routes answer an image, not JSON: documented here, as route schemas only carry JSON. */
function qrOperation(format: 'svg' | 'png', mediaType: string): OperationDoc {
  return {
    operationId: `getPayoutQr${format === 'svg' ? 'Svg' : 'Png'}`,
    tag: 'payouts',
    description:
      "The payout's `pix_copy_paste` as a QR code for your payer to scan (error correction M, 4-module " +
      'quiet zone). Available while the payout is PENDING; revalidate with `If-None-Match` ' +
      '(`Cache-Control: private, no-cache`). Spends the read rate-limit bucket.',
    image: mediaType,
    responses: {
      '200': `The QR code (${mediaType})`,
      '304': 'Not modified: the ETag sent in `If-None-Match` still matches and the payout is still PENDING',
      '404': 'Unknown id, malformed id, or a payout of another partner: `payout not found`',
      '410':
        'The payout is no longer PENDING, so its charge must not be paid: `payout is <STATUS>: its PIX charge can no longer be paid`',
    },
  };
}

export interface OperationDoc {
  operationId: string;
  tag: string;
  description: string;
  responses: Record<string, string>;
  example?: unknown;
  /** Media type of a 200 that is an image rather than JSON. */
  image?: string;
  /** The JSON body may be left out altogether (no content-type, nothing sent). */
  optionalBody?: boolean;
}

export const OPERATIONS: Record<string, OperationDoc> = {
  'post /v1/payouts': {
    operationId: 'createPayout',
    tag: 'payouts',
    example: {
      amount_brl: 100.0,
      receiver_wallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      pix_key: 'maria@example.com',
      pix_key_type: 'EMAIL',
    },
    description:
      'Starts a BRL → USDT payout and returns it PENDING, with the PIX charge in `pix_copy_paste`. ' +
      '`min_amount_usdt = amount_brl / (spot_rate × 1.06)`, rounded down to 6 decimals and fixed now. ' +
      '`amount_brl` has at most 2 decimals (more is refused, never rounded) and must yield at least 0.01 USDT. ' +
      '`pix_key_type` is one of CPF, CNPJ, EMAIL, PHONE, RANDOM (any case); `receiver_wallet` is an EVM ' +
      'address (EIP-55 checksum when mixed case, never the zero address). 100 requests per minute per API key.',
    responses: {
      '201':
        'Payout created, status PENDING. A repeated Idempotency-Key of the same partner within 24 h ' +
        'answers 201 with the original payout as it is now and `Idempotent-Replayed: true`; the new body is ignored.',
      '409':
        'Another request with the same Idempotency-Key is still in flight: `idempotency conflict`. Retry after a short delay.',
      '422':
        `The receiver failed screening; nothing was created. ${quoted(API_ERRORS.receiverBlockedByIssuer())} ` +
        `(USDT sent there could be frozen), or ${quoted(API_ERRORS.receiverFailedScreening())}. ` +
        'Final: a replay of the same Idempotency-Key answers the same.',
      '503':
        `Nothing was created; retry later: ${quoted(API_ERRORS.quoteUnavailable())} (with \`Retry-After\`), ` +
        `${quoted(API_ERRORS.quoteStale())} (the rate's price feed is stale; with \`Retry-After\`), ` +
        `${quoted(API_ERRORS.providerUnavailable())} (no PIX charge within 20 s), or ` +
        `${quoted(API_ERRORS.screeningUnavailable())} (with \`Retry-After\`), ` +
        `${quoted(API_ERRORS.treasuryCannotSend())} (with \`Retry-After\`), or ` +
        `${quoted(API_ERRORS.serviceBusy())} (too busy to start the payout safely; with \`Retry-After\`).`,
    },
  },
  'get /v1/payouts/{id}': {
    operationId: 'getPayout',
    tag: 'payouts',
    description:
      'The payout with its current status and settlement fields. Poll every 10 seconds until status is ' +
      'COMPLETED or FAILED. Settlement fields (`settled_amount_usdt`, `blockchain_*`, `block_explorer_url`, ' +
      '`paid_at`, `confirmed_at`) are filled only on COMPLETED. Own rate-limit bucket (default 600 per minute).',
    responses: {
      '200': 'The payout',
      '404': 'Unknown id, malformed id, or a payout of another partner: `payout not found`',
    },
  },
  'get /v1/payouts': {
    operationId: 'listPayouts',
    tag: 'payouts',
    description:
      'Your payouts, newest first (by `created_at`, then `id`), as `{"data": [Payout, ...], "has_more": bool}`; ' +
      'each item is exactly what GET /v1/payouts/{id} answers. To read everything (e.g. a daily ' +
      'reconciliation), pass the last `id` of each page as `starting_after` until `has_more` is false: ' +
      'the cursor is a position, not an offset, so payouts created meanwhile never make a page skip or ' +
      'repeat one. Items come from the read model, which follows each payout within moments; for a ' +
      'closed reconciliation window, set `created_at[lt]` a minute in the past. Spends the read ' +
      'rate-limit bucket of GET /v1/payouts/{id}.',
    responses: {
      '200': 'A page of payouts',
      '400':
        'A query parameter is invalid or unknown; the message names it (e.g. `limit must be an integer from 1 to 100`, ' +
        '`starting_after must be the id of one of your payouts`, or `created_at[gte] must be an ISO 8601 date-time ' +
        'with a time zone (e.g. 2026-01-31T00:00:00Z) or Unix seconds` for a value that is not a real instant)',
    },
  },
  'post /v1/payouts/{id}/cancel': {
    operationId: 'cancelPayout',
    tag: 'payouts',
    description:
      'Cancels a PENDING payout: it becomes FAILED (`failure_reason` `cancelled`) and its PIX charge is ' +
      "removed at the provider. The payout's workflow decides between the cancel and a payment arriving " +
      'at the same moment, once: if the payment won, the cancel answers 409 and the payout settles ' +
      'normally. No body. A refused cancel changes nothing, so asking again is safe; with an ' +
      'Idempotency-Key, a repeat of a cancel that succeeded answers 200 with the payout and ' +
      '`Idempotent-Replayed: true`. Spends the POST rate-limit bucket.',
    responses: {
      '200': 'The cancelled payout, status FAILED (or the replay of a cancel that succeeded)',
      '400': `\`Idempotency-Key\` malformed: ${quoted(API_ERRORS.invalidRequest(IDEMPOTENCY_KEY_MESSAGE))}`,
      '404': 'Unknown id, malformed id, or a payout of another partner: `payout not found`',
      '409':
        `A payment has already been applied or reached the provider first: ${quoted(API_ERRORS.payoutBeingProcessed())}; ` +
        'or the payout is already final: `payout is already <STATUS>` (e.g. `payout is already COMPLETED`)',
      '503':
        'The provider did not answer the removal in time; retry (the cancel may still complete): ' +
        quoted(API_ERRORS.providerUnavailable()),
    },
  },
  'get /v1/quotes': {
    operationId: 'previewQuote',
    tag: 'payouts',
    description:
      'The `min_amount_usdt` that POST /v1/payouts would fix for `amount_brl` now, computed by the same ' +
      'code with the same validation and messages. Not binding: the payout fixes its own minimum when ' +
      'created. `expires_at` is when the exchange rate in use is next refreshed. Spends the read ' +
      'rate-limit bucket.',
    responses: {
      '200': 'The preview: `{"amount_brl", "min_amount_usdt", "expires_at"}`',
      '400':
        'Invalid `amount_brl`, with the messages of POST /v1/payouts (e.g. `amount_brl must be > 0`, ' +
        '`amount_brl must have at most 2 decimal places`, `amount_brl is too small: min_amount_usdt must be at least 0.01`)',
      '503':
        `No exchange rate, with \`Retry-After\`: ${quoted(API_ERRORS.quoteUnavailable())}, or ` +
        `${quoted(API_ERRORS.quoteStale())} when the rate's price feed is stale`,
    },
  },
  'get /v1/payouts/{id}/qr.svg': qrOperation('svg', 'image/svg+xml'),
  'get /v1/payouts/{id}/qr.png': qrOperation('png', 'image/png'),
  'post /webhooks/{provider}': {
    operationId: 'receiveProviderNotification',
    tag: 'provider',
    description:
      'Called by the payment provider, never by partners. The token is recorded and the event is ' +
      'fetched back from the configured provider (nothing in the body is trusted); each token is processed once.',
    responses: {
      '200': 'Token recorded, or a repeat of a known token (discarded): `{"received": true}`',
      '400': 'Body is not `{"token": string}` with 1-512 characters of `A-Z a-z 0-9 . _ ~ -`',
      '404': '`unknown provider` (checked before the body is read)',
      '429':
        'Too many new tokens from this client address (WEBHOOK_RATE_LIMIT_PER_MINUTE): ' +
        '`rate limit exceeded, retry after 60 seconds`, with `Retry-After: 60`. A known token is never throttled.',
    },
  },
  ...CALLBACK_OPERATIONS,
};
