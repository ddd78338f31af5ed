/**
 * The outbound partner callbacks in the OpenAPI document's `webhooks` section (OpenAPI 3.1): what
 * this service POSTs to a partner's callback URL, signed by the Standard Webhooks specification.
 * The payout in the body is the same schema as the 201 of POST /v1/payouts and the 200 of GET.
 */

type Json = Record<string, unknown>;

const SIGNATURE_HEADERS = [
  {
    name: 'webhook-id',
    description:
      'The event id (`evt_<payout id>_completed` or `evt_<payout id>_failed`), the same on every retry: de-duplicate on it.',
    example: 'evt_0b8f7a0e-6d1c-4a35-9d7e-3f2a1c5b9e01_completed',
  },
  {
    name: 'webhook-timestamp',
    description: 'Unix seconds of this attempt; libraries refuse one more than 5 minutes from their clock.',
    example: '1767225600',
  },
  {
    name: 'webhook-signature',
    description:
      '`v1,<base64 HMAC-SHA256>` over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64 part of ' +
      'your `whsec_` secret. Verify with any Standard Webhooks library (npm and PyPI `standardwebhooks`, ...).',
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  },
];

const EVENTS = {
  'payout.completed': 'The USDT was delivered: the payout is COMPLETED, with its settlement fields.',
  'payout.failed': 'The payout ended FAILED (expired charge, cancelled, provider or settlement failure).',
} as const;

/** Adds `webhooks` for payout.completed and payout.failed, reusing the payout schema of the paths. */
export function describeCallbackWebhooks<D>(generated: D): D {
  const doc = generated as Json & { paths?: Record<string, Record<string, Json>> };
  const created = doc.paths?.['/v1/payouts']?.post as
    { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> } | undefined;
  const payout = created?.responses?.['201']?.content?.['application/json']?.schema ?? { type: 'object' };

  doc.webhooks = Object.fromEntries(
    Object.entries(EVENTS).map(([event, when]) => [
      event,
      {
        post: {
          operationId: event === 'payout.completed' ? 'payoutCompletedCallback' : 'payoutFailedCallback',
          tags: ['callbacks'],
          // Authenticated by the signature headers below (an HMAC over the body), which no OpenAPI
          // security scheme can express; no credential of a scheme's kind is sent.
          security: [],
          summary: `${event} (to your callback URL)`,
          description:
            `${when} Sent to the callback URL your account manager set, signed (Standard Webhooks). ` +
            'At least once: answer 2xx once you have stored it; anything else (or no answer within 10 s) ' +
            'is retried with backoff for 24 hours.',
          parameters: SIGNATURE_HEADERS.map((h) => ({
            name: h.name,
            in: 'header',
            required: true,
            description: h.description,
            schema: { type: 'string' },
            example: h.example,
          })),
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['event', 'payout'],
                  additionalProperties: false,
                  properties: { event: { type: 'string', const: event }, payout },
                },
              },
            },
          },
          responses: {
            '2XX': { description: 'Received: delivery stops.' },
            default: { description: 'Not received: the same event (same webhook-id) is sent again later.' },
          },
        },
      },
    ]),
  );
  return generated;
}
