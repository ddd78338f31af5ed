import type { Client } from '@temporalio/client';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Db } from '../../adapters/db/pool';
import { partnerOf, type Authenticate } from '../auth';
import { API_ERRORS } from '../errors';
import { READ_BUCKET } from '../rate-limit';
import { loadPartnerPayout, payoutOfPath } from './load-payout';
import { cachedQrRenderer, QR_FORMATS, qrCodeEtag, type QrFormat } from './qr-code';
import { errorBodySchema, payoutIdParamsSchema } from './payout.schemas';

export interface PayoutQrRoutesOptions {
  db: Db;
  temporal: Client;
  readRateLimitPerMinute: number;
  /** The one X-Api-Key check of the api (built once in app.ts). */
  authenticate: Authenticate;
}

/**
 * The same image for as long as the payout can be paid, but whether it can must be asked every time:
 * a browser keeps the image (private: it is one partner's) and revalidates it with If-None-Match,
 * which answers 304 while the payout is PENDING and 410 once it is not.
 */
const CACHE_CONTROL = 'private, no-cache';

function ifNoneMatch(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match'];
  if (!header) return false;
  return header.split(',').some((tag) => {
    const candidate = tag.trim().replace(/^W\//, '');
    return candidate === '*' || candidate === etag;
  });
}

/**
 * GET /v1/payouts/{id}/qr.svg and /qr.png: the payout's `pix_copy_paste` as a QR code for the
 * partner to show its payer. Only a PENDING payout's charge can be paid; any other status answers
 * 410, so a screen that still shows an old code learns it is gone (paying a charge twice only opens
 * a refund case).
 */
export const payoutQrRoutes: FastifyPluginAsyncZod<PayoutQrRoutesOptions> = async (app, opts) => {
  // The payout's row is read with the API key, in one round trip (docs/decisions.md D78).
  const authorized = opts.authenticate.spending(
    READ_BUCKET,
    opts.readRateLimitPerMinute,
    'key',
    payoutOfPath,
  );
  const render = cachedQrRenderer();

  for (const format of Object.keys(QR_FORMATS) as QrFormat[]) {
    app.get(
      `/v1/payouts/:id/qr.${format}`,
      {
        onRequest: authorized,
        schema: {
          summary: `The payout's PIX charge as a QR code (${format.toUpperCase()})`,
          params: payoutIdParamsSchema,
          response: {
            401: errorBodySchema,
            404: errorBodySchema,
            410: errorBodySchema,
            429: errorBodySchema,
          },
        },
      },
      async (request, reply) => serveQrCode(request, reply, request.params.id, format),
    );
  }

  async function serveQrCode(
    request: FastifyRequest,
    reply: FastifyReply,
    payoutId: string,
    format: QrFormat,
  ) {
    const payout = await loadPartnerPayout(opts, partnerOf(request).id, payoutId, request.prefetched?.payout);
    if (!payout) throw API_ERRORS.payoutNotFound();
    if (payout.status !== 'PENDING') {
      throw API_ERRORS.chargeNoLongerPayable(payout.status);
    }
    // A PENDING payout always holds its charge (POST answers only once it exists).
    if (!payout.pixCopyPaste) throw new Error(`PENDING payout ${payout.id} has no pix_copy_paste`);

    const etag = qrCodeEtag(payout.pixCopyPaste, format);
    reply.headers({
      etag,
      'cache-control': CACHE_CONTROL,
      // One URL answers each API key differently (404 for another partner's payout).
      vary: 'X-Api-Key',
      'x-content-type-options': 'nosniff',
    });
    if (ifNoneMatch(request, etag)) return reply.code(304).send();
    // An SVG opened directly in a browser is a document: it must run nothing.
    if (format === 'svg')
      reply.header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'");
    return reply
      .code(200)
      .type(QR_FORMATS[format])
      .send(await render(payout.pixCopyPaste, format, etag));
  }
};
