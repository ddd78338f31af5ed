import { API_ERRORS } from '../errors';
import { MAX_OVERLAP_SECONDS } from '../../domain/rotation';
import { URL_REFUSALS } from '../../adapters/callbacks/url-guard';
import {
  CALLBACK_TEST_EVENT,
  EVENTS_LIMIT_DEFAULT,
  EVENTS_LIMIT_MAX,
  EVENTS_STARTING_AFTER_UNKNOWN,
} from '../callbacks/callback.schemas';

/** What a route schema cannot say of the self-service callback operations (docs/decisions.md D65). */
export interface CallbackOperationDoc {
  operationId: string;
  tag: string;
  description: string;
  responses: Record<string, string>;
  example?: unknown;
  /** The JSON body may be left out altogether. */
  optionalBody?: boolean;
}

const TAG = 'callback endpoint';
const NO_CALLBACK = `No callback URL is set: \`${API_ERRORS.noCallbackConfigured().message}\``;
const BUCKET =
  'Spends the callback rate-limit bucket: per partner (all your API keys together), apart from the ' +
  'payout and read buckets, by default 30 requests per minute.';

export const CALLBACK_TAG = {
  name: TAG,
  description: 'Your callback URL, its signing secret, a test event and the delivery log (self-service)',
};

export const CALLBACK_OPERATIONS: Record<string, CallbackOperationDoc> = {
  'get /v1/callback': {
    operationId: 'getCallback',
    tag: TAG,
    description:
      'Your callback URL (null when none is set) and, while a rotation overlap lasts, when the replaced ' +
      `secret stops signing. Secrets are never shown again. ${BUCKET}`,
    responses: { '200': 'Your callback settings' },
  },
  'put /v1/callback': {
    operationId: 'setCallback',
    tag: TAG,
    example: { url: 'https://partner.example/pix-payouts/callbacks' },
    description:
      'Sets the URL payout events are POSTed to. The URL is checked as every delivery checks it: https, ' +
      'no credentials, and a host that resolves only to public addresses (a host that does not resolve ' +
      'yet is accepted; each delivery checks it again). The first time, a signing secret is created and ' +
      'returned once as `secret`; later calls keep it (rotate it with POST /v1/callback/rotate-secret). ' +
      BUCKET,
    responses: {
      '200': 'The URL, and `secret` when this call created it',
      '400':
        'Invalid body (`url is required`, `url must be an https URL`, `unknown field: <name>`), or the URL ' +
        `is refused: \`url refused: <reason>\` (e.g. \`url refused: ${URL_REFUSALS.notPublic}\`, ` +
        `\`url refused: ${URL_REFUSALS.httpInProduction}\`)`,
      '503':
        `The URL's host could not be resolved now (its DNS did not answer in time): ` +
        `\`${API_ERRORS.callbackUrlUnresolvedNow().message}\`, with \`Retry-After\`. Nothing was changed.`,
    },
  },
  'delete /v1/callback': {
    operationId: 'deleteCallback',
    tag: TAG,
    description:
      'Removes the URL and its secret: no callbacks are sent until a URL is set again (events due ' +
      `meanwhile are listed as \`skipped\`). ${BUCKET}`,
    responses: { '200': 'The cleared settings' },
  },
  'post /v1/callback/rotate-secret': {
    operationId: 'rotateCallbackSecret',
    tag: TAG,
    example: { overlap_seconds: 86_400 },
    optionalBody: true,
    description:
      'Replaces the signing secret and returns the new one once. During `overlap_seconds` (at most ' +
      `${MAX_OVERLAP_SECONDS}, 30 days) every callback carries a signature by each secret, so a receiver ` +
      'checking either accepts it: deploy the new secret, then let the overlap end. The body is optional: ' +
      'none at all, or `{}`, rotates with `overlap_seconds` 0 (the replaced secret stops at once). While an ' +
      'overlap runs, another rotation with `overlap_seconds` above 0 is refused with 409 (it would end the ' +
      'secret your receivers may still check); with 0 it ends every replaced secret at once (a leaked ' +
      `secret). ${BUCKET}`,
    responses: {
      '200': 'The new secret, and when the replaced one stops signing',
      '400': `Invalid body: \`overlap_seconds must be a whole number from 0 to ${MAX_OVERLAP_SECONDS}\`, \`unknown field: <name>\``,
      '409':
        `${NO_CALLBACK}; or a previous rotation's overlap still runs: ` +
        `\`${API_ERRORS.callbackOverlapActive('<until>').message}\` (\`<until>\` is when it ends)`,
    },
  },
  'post /v1/callback/test': {
    operationId: 'sendTestCallback',
    tag: TAG,
    description:
      `POSTs \`{"event": "${CALLBACK_TEST_EVENT}", "created_at": ...}\` to your URL now, signed like every ` +
      'callback (Standard Webhooks; by both secrets during an overlap), once, and answers what your ' +
      'endpoint did. A test event is not retried and not listed in GET /v1/callback/events. No body. ' +
      BUCKET,
    responses: {
      '200':
        'The attempt: `delivered` is true on a 2xx; otherwise `status_code` or `error` says why (a refused ' +
        `URL reads \`refused: <reason>\`, e.g. \`refused: ${URL_REFUSALS.notPublic}\`)`,
      '409': NO_CALLBACK,
    },
  },
  'get /v1/callback/events': {
    operationId: 'listCallbackEvents',
    tag: TAG,
    description:
      'Your payout events (`payout.completed`, `payout.failed`), newest first (by `created_at`, then ' +
      '`event_id`), each with every delivery attempt: when, how long, the URL called (without its query ' +
      'string), your status code or the error, and the start of your answer. One page at a time, as ' +
      '`{"data": [...], "has_more": bool}`: pass the last `event_id` of a page as `starting_after` for the ' +
      `next while \`has_more\` is true (\`limit\` 1-${EVENTS_LIMIT_MAX}, default ${EVENTS_LIMIT_DEFAULT}). ` +
      'The cursor is a position, not an offset: events created meanwhile never make a page skip or repeat ' +
      `one. ${BUCKET}`,
    responses: {
      '200': 'A page of events',
      '400':
        `\`limit must be a whole number from 1 to ${EVENTS_LIMIT_MAX}\`, \`${EVENTS_STARTING_AFTER_UNKNOWN}\`, ` +
        '`unknown query parameter: <name>`',
    },
  },
};
