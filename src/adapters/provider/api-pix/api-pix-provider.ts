import type { z } from 'zod';

import { BrCodeError, parseBrCode } from '../../../domain/brcode';
import { formatCentavos, parseDecimal } from '../../../domain/money';
import type { ProviderEvent } from '../../../domain/provider-event';
import type { ProviderCallMetric } from '../http-call';
import { invalid } from '../http-answers';
import { ProviderError, type ChargeStatus, type PaymentReturns, type PixCollection } from '../types';
import { createApiPixCall } from './api-pix-call';
import { createApiPixReturns } from './api-pix-returns';
import { cobSchema, pixSchema, webhookSchema, type Cob } from './api-pix-bodies';
import type { HttpsTransport } from './mtls-transport';
import type { TokenSource } from './oauth-token';
import { payoutIdOfTxid, txidOfPayout } from './txid';

export interface ApiPixProviderOptions {
  transport: HttpsTransport;
  tokens: TokenSource;
  /** The API's base, to which `/cob/{txid}` is appended, e.g. https://pix.example.com/api/v2. */
  baseUrl: string;
  /** The receiver's PIX key at the institution (`chave`): every charge pays into it. */
  receiverKey: string;
  /** Shown to the payer by the bank app (`solicitacaoPagador`, at most 140 characters). */
  payerMessage: string;
  now?: () => Date;
  onCall?: (m: ProviderCallMetric) => void;
}

/** The institution's webhook registration for the receiver's key, as the admin CLI manages it. */
export interface PixWebhookAdmin {
  registerWebhook(url: string): Promise<void>;
  /** null when no webhook is registered. */
  getWebhook(): Promise<{ url: string; registeredAt?: string } | null>;
}

/**
 * The service's PIX collection on any Brazilian bank or payment institution through the Central
 * Bank's standard API Pix (docs/api-pix.md): immediate charges (`cob`) under a txid derived from the
 * payout id, their status and received Pix, their removal, and the Pix behind each webhook, read back
 * by its endToEndId. Mutual TLS and OAuth2 are the transport's and the token source's; every answer is
 * validated here and nothing unvalidated leaves this module.
 */
export function createApiPixProvider(
  opts: ApiPixProviderOptions,
): PixCollection & PaymentReturns & PixWebhookAdmin {
  const now = opts.now ?? (() => new Date());

  const call = createApiPixCall(opts);

  const readCob = (operation: string, txid: string) =>
    call({ operation, method: 'GET', path: `/cob/${txidPath(operation, txid)}`, schema: cobSchema });

  /** A cob is ours only if it is the one asked for, into our key, for the amount asked. */
  function checkOurs(operation: string, cob: Cob, txid: string, amountCentavos?: bigint): void {
    // Our txids are lower-case hex; an institution may echo them in another case.
    if (cob.txid.toLowerCase() !== txid.toLowerCase())
      throw invalid(operation, 'txid differs from the request');
    if (cob.chave !== opts.receiverKey) throw invalid(operation, 'chave is not the receiver key');
    if (amountCentavos !== undefined && parseDecimal(cob.valor.original, 2) !== amountCentavos) {
      throw invalid(operation, 'valor.original differs from the request');
    }
  }

  function chargeOf(operation: string, cob: Cob) {
    const code = cob.pixCopiaECola;
    if (code === undefined) throw invalid(operation, 'pixCopiaECola is missing');
    checkDynamicCode(operation, code, cob.valor.original);
    return { chargeId: cob.txid.toLowerCase(), pixCopyPaste: code, expiresAt: expiryOf(cob).toISOString() };
  }

  return {
    ...createApiPixReturns(call),

    async createCharge(req) {
      const txid = txidOfPayout(req.externalId);
      const amount = formatCentavos(req.amountCentavos);
      try {
        const cob = await call({
          operation: 'createCharge',
          method: 'PUT',
          path: `/cob/${txid}`,
          body: {
            calendario: { expiracao: req.expiresInSeconds },
            // 0: the payer's bank may not change the amount (a dynamic BR Code for exactly this payout).
            valor: { original: amount, modalidadeAlteracao: 0 },
            chave: opts.receiverKey,
            solicitacaoPagador: opts.payerMessage,
          },
          schema: cobSchema,
        });
        checkOurs('createCharge', cob, txid, req.amountCentavos);
        return chargeOf('createCharge', cob);
      } catch (err) {
        // API Pix answers a second PUT of a txid with 400 ("txid already used"), even when it is our
        // own retry after a lost answer: the cob that exists under our txid is then the one we created.
        if (!(err instanceof ProviderError) || err.httpStatus !== 400) throw err;
        let existing: Cob;
        try {
          existing = await readCob('createCharge', txid);
        } catch (readErr) {
          // No cob under our txid: the 400 was a real refusal of what we sent.
          if (readErr instanceof ProviderError && readErr.code === 'not_found') throw err;
          throw readErr;
        }
        checkOurs('createCharge', existing, txid, req.amountCentavos);
        return chargeOf('createCharge', existing);
      }
    },

    async getChargeStatus(chargeId) {
      const cob = await readCob('getChargeStatus', chargeId);
      checkOurs('getChargeStatus', cob, chargeId);
      return statusOf(cob, now());
    },

    async fetchNotification(endToEndId) {
      if (!/^[a-zA-Z0-9]{32}$/.test(endToEndId)) {
        throw new ProviderError(
          'provider fetchNotification: not an endToEndId',
          'unknown_notification',
          false,
        );
      }
      const pix = await call({
        operation: 'fetchNotification',
        method: 'GET',
        path: `/pix/${endToEndId}`,
        schema: pixSchema,
        notFoundCode: 'unknown_notification',
      });
      if (pix.endToEndId !== endToEndId)
        throw invalid('fetchNotification', 'endToEndId differs from the request');
      return receivedEvent(pix);
    },

    async cancelCharge(chargeId) {
      try {
        const cob = await call({
          operation: 'cancelCharge',
          method: 'PATCH',
          path: `/cob/${txidPath('cancelCharge', chargeId)}`,
          body: { status: 'REMOVIDA_PELO_USUARIO_RECEBEDOR' },
          schema: cobSchema,
        });
        checkOurs('cancelCharge', cob, chargeId);
        if (cob.status === 'REMOVIDA_PELO_USUARIO_RECEBEDOR')
          return { kind: 'removed', removedAt: now().toISOString() };
        throw invalid('cancelCharge', `status ${cob.status} after removal`);
      } catch (err) {
        // A cob that was paid (or removed before) cannot be changed: API Pix answers 400, and the cob
        // itself says which of the two it was.
        if (!(err instanceof ProviderError) || err.httpStatus !== 400) throw err;
        const cob = await readCob('cancelCharge', chargeId);
        checkOurs('cancelCharge', cob, chargeId);
        if (cob.status === 'CONCLUIDA' || (cob.pix ?? []).length > 0) return { kind: 'already_paid' };
        if (cob.status !== 'ATIVA') return { kind: 'removed', removedAt: now().toISOString() };
        // Refused, yet payable and unpaid: the two answers contradict each other (the read may come
        // from a replica that has not seen the payment that made the removal fail). Not a verdict on
        // the payment: asked again until they agree.
        throw new ProviderError(
          'provider cancelCharge: removal refused, yet the cob reads ATIVA without Pix',
          'inconsistent_answer',
          true,
        );
      }
    },

    async registerWebhook(url) {
      await call({
        operation: 'registerWebhook',
        method: 'PUT',
        path: `/webhook/${encodeURIComponent(opts.receiverKey)}`,
        body: { webhookUrl: url },
        schema: null,
      });
    },

    async getWebhook() {
      try {
        const body = await call({
          operation: 'getWebhook',
          method: 'GET',
          path: `/webhook/${encodeURIComponent(opts.receiverKey)}`,
          schema: webhookSchema,
        });
        return { url: body.webhookUrl, ...(body.criacao !== undefined && { registeredAt: body.criacao }) };
      } catch (err) {
        if (err instanceof ProviderError && err.code === 'not_found') return null;
        throw err;
      }
    },
  };
}

/** A charge id as a path segment: only a txid (a stranded id of another provider never reaches a URL). */
function txidPath(operation: string, txid: string): string {
  if (!/^[a-zA-Z0-9]{26,35}$/.test(txid)) {
    throw new ProviderError(`provider ${operation}: not an API Pix txid`, 'not_found', false);
  }
  return txid;
}

function expiryOf(cob: Cob): Date {
  return new Date(Date.parse(cob.calendario.criacao) + cob.calendario.expiracao * 1000);
}

/**
 * A cob's status in the service's terms. Paid is decided by the Pix received, never by the status
 * alone: a CONCLUIDA whose Pix are not listed yet is an answer we cannot use (the caller retries), not
 * "unpaid". API Pix leaves an unpaid cob ATIVA past its expiry; the service calls it expired then.
 */
function statusOf(cob: Cob, now: Date): ChargeStatus {
  const pix = cob.pix ?? [];
  const externalId = payoutIdOfTxid(cob.txid);
  if (externalId === null) throw invalid('getChargeStatus', 'txid is not one of ours');
  if (cob.status === 'CONCLUIDA' && pix.length === 0) {
    throw invalid('getChargeStatus', 'a CONCLUIDA cob lists no pix yet');
  }
  const expiresAt = expiryOf(cob);
  const status =
    pix.length > 0
      ? 'paid'
      : cob.status !== 'ATIVA'
        ? 'removed'
        : now.getTime() > expiresAt.getTime()
          ? 'expired'
          : 'active';
  return {
    chargeId: cob.txid.toLowerCase(),
    externalId,
    amountBrl: cob.valor.original,
    status,
    expiresAt: expiresAt.toISOString(),
    payments: pix.map((p) => ({
      eventId: p.endToEndId,
      amountBrl: p.valor,
      paidAt: p.horario,
      // A devolução under way or done: the payer is getting this payment back (MED, the portal).
      ...((p.devolucoes ?? []).some((d) => d.status !== 'NAO_REALIZADO') && { returned: true }),
      ...(returnedInFull(p) && { returnedInFull: true }),
    })),
  };
}

/** The devoluções done for a Pix add up to its whole amount (amounts in centavos, never floats). */
function returnedInFull(pix: z.infer<typeof pixSchema>): boolean {
  const done = (pix.devolucoes ?? [])
    .filter((d) => d.status === 'DEVOLVIDO')
    .reduce((sum, d) => sum + parseDecimal(d.valor, 2), 0n);
  return done > 0n && done >= parseDecimal(pix.valor, 2);
}

/**
 * A received Pix as the payment event of its payout. A Pix without a txid of ours (a transfer to the
 * receiver key outside any charge) names no payout: its external id is empty, which no payout has.
 */
function receivedEvent(pix: z.infer<typeof pixSchema>): ProviderEvent {
  return {
    type: 'pix.received',
    eventId: pix.endToEndId,
    chargeId: pix.txid?.toLowerCase() ?? '',
    externalId: (pix.txid !== undefined && payoutIdOfTxid(pix.txid)) || '',
    occurredAt: pix.horario,
    paidAt: pix.horario,
    amountBrl: pix.valor,
  };
}

/**
 * The partner shows this code to the payer: it must be a dynamic BR Code (a location the payer's bank
 * fetches the charge from, no key: the amount cannot be changed) for exactly the charge's amount.
 */
function checkDynamicCode(operation: string, code: string, amount: string): void {
  let parsed;
  try {
    parsed = parseBrCode(code);
  } catch (err) {
    if (err instanceof BrCodeError)
      throw invalid(operation, `pixCopiaECola is not a BR Code (${err.message})`);
    throw err;
  }
  if (parsed.merchantAccount.url === undefined || parsed.merchantAccount.key !== undefined) {
    throw invalid(operation, 'pixCopiaECola is not a dynamic BR Code (a location, no key)');
  }
  if (
    parsed.transactionAmount !== undefined &&
    parseDecimal(parsed.transactionAmount, 2) !== parseDecimal(amount, 2)
  ) {
    throw invalid(operation, 'pixCopiaECola carries another amount');
  }
}
