import type { z } from 'zod';

import { sameExternalId } from '../../domain/ids';
import { formatCentavos, parseDecimal } from '../../domain/money';
import type { ProviderEvent } from '../../domain/provider-event';
import {
  chargeBody,
  chargeRemovalBody,
  chargeStatusBody,
  notificationBody,
  quoteBody,
  returnBody,
  settlementBody,
  settlementStatusBody,
} from './http-bodies';
import { createHttpCall, type HttpProviderOptions } from './http-call';
import { invalid } from './http-answers';
import { ProviderError, type PaymentProvider, type PaymentReturn } from './types';

/**
 * HTTP client of the payment provider: each operation's request and the mapping of its answer.
 * Every answer is validated (http-call.ts, against http-bodies.ts); nothing unvalidated leaves here.
 */
export function createHttpProvider(opts: HttpProviderOptions): PaymentProvider {
  const call = createHttpCall(opts);

  return {
    async getQuote() {
      const body = await call({
        operation: 'getQuote',
        method: 'GET',
        path: '/fx/quote?pair=USDT-BRL',
        schema: quoteBody,
      });
      return { rate: body.rate, quotedAt: body.quoted_at };
    },

    async createCharge(req) {
      const body = await call({
        operation: 'createCharge',
        method: 'POST',
        path: '/pix/charges',
        body: {
          external_id: req.externalId,
          amount_brl: formatCentavos(req.amountCentavos),
          payer_pix_key: req.payerPixKey,
          payer_pix_key_type: req.payerPixKeyType,
          expires_in_seconds: req.expiresInSeconds,
        },
        schema: chargeBody,
      });
      // A charge for another payout or another amount must never be shown to a payer.
      if (!sameExternalId(body.external_id, req.externalId))
        throw invalid('createCharge', 'external_id differs from the request');
      if (parseDecimal(body.amount_brl, 2) !== req.amountCentavos) {
        throw invalid('createCharge', 'amount_brl differs from the request');
      }
      return { chargeId: body.charge_id, pixCopyPaste: body.pix_copy_paste, expiresAt: body.expires_at };
    },

    async requestSettlement(req) {
      const body = await call({
        operation: 'requestSettlement',
        method: 'POST',
        path: '/settlements',
        body: {
          external_id: req.externalId,
          charge_id: req.chargeId,
          receiver_wallet: req.receiverWallet,
          chain_id: req.chainId,
        },
        schema: settlementBody,
        // A charge the provider does not see paid (yet) is not the same no as a reused external_id:
        // the payment may simply not have reached the replica that answered.
        conflictCodes: ['charge_not_paid'],
      });
      return {
        settlementId: body.settlement_id,
        status: body.status,
        ...(body.tx_hash != null && { txHash: body.tx_hash as `0x${string}` }),
      };
    },

    async getSettlementStatus(settlementId) {
      const body = await call({
        operation: 'getSettlementStatus',
        method: 'GET',
        path: `/settlements/${encodeURIComponent(settlementId)}`,
        schema: settlementStatusBody,
        notFoundCode: 'unknown_settlement',
      });
      if (body.settlement_id !== settlementId) {
        throw invalid('getSettlementStatus', 'settlement_id differs from the request');
      }
      return {
        settlementId: body.settlement_id,
        externalId: body.external_id,
        chargeId: body.charge_id,
        receiverWallet: body.receiver_wallet,
        chainId: body.chain_id,
        status: body.status,
        ...(body.tx_hash !== null && { txHash: body.tx_hash as `0x${string}` }),
        ...(body.amount_usdt !== null && { amountUsdt: body.amount_usdt }),
        ...(body.failure_reason !== null && { failureReason: body.failure_reason }),
        updatedAt: body.updated_at,
      };
    },

    async requestReturn(req) {
      const body = await call({
        operation: 'requestReturn',
        method: 'POST',
        path: '/pix/returns',
        body: {
          refund_id: req.refundId,
          event_id: req.eventId,
          amount_brl: req.amountBrl,
          reason: req.reason.slice(0, 500),
        },
        schema: returnBody,
        notFoundCode: 'unknown_payment',
      });
      // Another payment's return, or another amount, is not the one asked for.
      if (body.refund_id !== req.refundId || body.event_id !== req.eventId) {
        throw invalid('requestReturn', 'refund_id or event_id differs from the request');
      }
      if (parseDecimal(body.amount_brl, 2) !== parseDecimal(req.amountBrl, 2)) {
        throw invalid('requestReturn', 'amount_brl differs from the request');
      }
      return returnOf(body);
    },

    async getReturn(ref) {
      const body = await call({
        operation: 'getReturn',
        method: 'GET',
        path: `/pix/returns/${encodeURIComponent(ref.returnId)}`,
        schema: returnBody,
        notFoundCode: 'unknown_return',
      });
      if (body.return_id !== ref.returnId || body.refund_id !== ref.refundId) {
        throw invalid('getReturn', 'return_id or refund_id differs from the request');
      }
      return returnOf(body);
    },

    async getChargeStatus(chargeId) {
      const body = await call({
        operation: 'getChargeStatus',
        method: 'GET',
        path: `/pix/charges/${encodeURIComponent(chargeId)}`,
        schema: chargeStatusBody,
      });
      if (body.charge_id !== chargeId) throw invalid('getChargeStatus', 'charge_id differs from the request');
      return {
        chargeId: body.charge_id,
        externalId: body.external_id,
        amountBrl: body.amount_brl,
        status: body.status,
        expiresAt: body.expires_at,
        payments: body.payments.map((p) => ({
          eventId: p.event_id,
          amountBrl: p.amount_brl,
          paidAt: p.paid_at,
        })),
      };
    },

    async fetchNotification(token) {
      const body = await call({
        operation: 'fetchNotification',
        method: 'GET',
        path: `/pix/notification/${encodeURIComponent(token)}`,
        schema: notificationBody,
        redact: [token],
        notFoundCode: 'unknown_notification',
      });
      if (body.token !== undefined && body.token !== token) {
        throw invalid('fetchNotification', 'token differs from the one requested');
      }
      return toNotification(body);
    },

    async cancelCharge(chargeId) {
      try {
        const body = await call({
          operation: 'cancelCharge',
          method: 'PATCH',
          path: `/pix/charges/${encodeURIComponent(chargeId)}`,
          body: { status: 'removed' },
          schema: chargeRemovalBody,
        });
        if (body.charge_id !== chargeId) throw invalid('cancelCharge', 'charge_id differs from the request');
        return { kind: 'removed', removedAt: body.removed_at };
      } catch (err) {
        // 409 is the contract's answer for a charge that was paid before it could be removed: not a
        // failure of the call but the provider's decision, which the caller acts on.
        if (err instanceof ProviderError && err.code === 'conflict') return { kind: 'already_paid' };
        throw err;
      }
    },
  };
}

function returnOf(body: z.infer<typeof returnBody>): PaymentReturn {
  return {
    returnId: body.return_id,
    status: body.status,
    ...(body.refusal_reason !== null && { refusalReason: body.refusal_reason }),
  };
}

function toNotification(body: z.infer<typeof notificationBody>): ProviderEvent {
  const common = {
    eventId: body.event_id,
    chargeId: body.charge_id,
    externalId: body.external_id,
    occurredAt: body.occurred_at,
  };
  switch (body.type) {
    case 'pix.received':
      return { type: body.type, ...common, paidAt: body.paid_at, amountBrl: body.amount_brl };
    case 'settlement.completed':
      return {
        type: body.type,
        ...common,
        txHash: body.tx_hash as `0x${string}`,
        amountUsdt: body.amount_usdt,
        chainId: body.chain_id,
        confirmedAt: body.confirmed_at,
      };
    case 'settlement.failed':
      return { type: body.type, ...common, failureReason: body.failure_reason };
  }
}
