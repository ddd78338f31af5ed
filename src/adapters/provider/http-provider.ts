import { z } from 'zod';

import { sameExternalId } from '../../domain/ids';
import { formatCentavos, parseDecimal } from '../../domain/money';
import type { ProviderEvent } from '../../domain/provider-event';
import { describeIssues, invalid, parseJson, readText, statusError, transportError } from './http-answers';
import { ProviderError, type PaymentProvider, type PaymentReturn } from './types';

export interface ProviderCallMetric {
  operation: string;
  durationMs: number;
  outcome: 'ok' | 'error';
  status?: number;
}

export interface HttpProviderOptions {
  /** e.g. http://127.0.0.1:4000 (a path prefix is kept: https://host/provider/v1 works too). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; never logged nor echoed in errors. */
  apiKey?: string;
  /** Per call, covering connect + response body. Default 10 s. */
  timeoutMs?: number;
  onCall?: (m: ProviderCallMetric) => void;
}

const DEFAULT_TIMEOUT_MS = 10_000;

const isoDateTime = z.iso.datetime({ offset: true });
const nonEmpty = z.string().min(1).max(512);
const brlAmount = z.string().regex(/^\d{1,15}\.\d{2}$/, 'a BRL amount with 2 decimals');
const usdtAmount = z.string().regex(/^\d{1,15}(\.\d{1,6})?$/, 'a USDT amount with at most 6 decimals');

const quoteBody = z.object({
  pair: z.literal('USDT-BRL'),
  rate: z
    .string()
    .regex(/^\d{1,9}(\.\d{1,12})?$/, 'a decimal rate')
    .refine((r) => /[1-9]/.test(r), 'a positive rate'),
  quoted_at: isoDateTime,
});

const chargeBody = z.object({
  charge_id: nonEmpty,
  external_id: nonEmpty,
  amount_brl: brlAmount,
  // An EMV BR Code is at most 512 characters.
  pix_copy_paste: z.string().min(20).max(512),
  expires_at: isoDateTime,
});

const chargeStatusBody = z
  .object({
    charge_id: nonEmpty,
    external_id: nonEmpty,
    amount_brl: brlAmount,
    status: z.enum(['active', 'paid', 'expired', 'removed']),
    expires_at: isoDateTime,
    paid_at: isoDateTime.optional(),
    paid_amount_brl: brlAmount.optional(),
    payments: z
      .array(z.object({ event_id: nonEmpty, amount_brl: brlAmount, paid_at: isoDateTime }))
      .max(1000),
  })
  .refine((b) => (b.status === 'paid') === b.payments.length > 0, 'status paid exactly when payments exist');

const txHash = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'a 32-byte transaction hash');
const settlementState = z.enum(['pending', 'broadcast', 'completed', 'failed']);

/** POST /settlements, first or repeated: a convenience view; GET /settlements/{id} is the full one. */
const settlementBody = z
  .object({
    settlement_id: nonEmpty,
    status: settlementState,
    tx_hash: txHash.nullish(),
    amount_usdt: usdtAmount.nullish(),
  })
  .refine((b) => b.status !== 'pending' || b.tx_hash == null, 'a pending settlement has sent nothing');

/**
 * GET /settlements/{settlement_id}. Every field must be present, null when it does not apply: a
 * failed settlement whose `tx_hash` is null is read as "nothing was ever sent", so a body that merely
 * leaves the field out must not pass for that.
 */
const settlementStatusBody = z
  .object({
    settlement_id: nonEmpty,
    external_id: nonEmpty,
    charge_id: nonEmpty,
    receiver_wallet: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'an EVM address'),
    chain_id: z.number().int().positive(),
    status: settlementState,
    tx_hash: txHash.nullable(),
    amount_usdt: usdtAmount.nullable(),
    failure_reason: z.string().max(2000).nullable(),
    updated_at: isoDateTime,
  })
  .refine((b) => b.status !== 'pending' || b.tx_hash === null, 'a pending settlement has sent nothing')
  .refine(
    (b) => (b.status !== 'broadcast' && b.status !== 'completed') || b.tx_hash !== null,
    'tx_hash is set once a transaction was sent',
  )
  .refine(
    (b) => b.status !== 'completed' || b.amount_usdt !== null,
    'a completed settlement has amount_usdt',
  );

/**
 * POST /pix/returns and GET /pix/returns/{return_id}. A refused return carries its reason; any other
 * carries none, so a body that says `refused` without one is not taken for a refusal.
 */
const returnBody = z
  .object({
    return_id: nonEmpty,
    refund_id: nonEmpty,
    event_id: nonEmpty,
    amount_brl: brlAmount,
    status: z.enum(['returning', 'returned', 'refused']),
    refusal_reason: z.string().min(1).max(2000).nullable(),
    requested_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .refine(
    (b) => (b.status === 'refused') === (b.refusal_reason !== null),
    'a refusal reason exactly when refused',
  );

const notificationCommon = {
  token: z.string().optional(),
  event_id: nonEmpty,
  charge_id: nonEmpty,
  external_id: nonEmpty,
  occurred_at: isoDateTime,
};

const notificationBody = z.discriminatedUnion('type', [
  z.object({
    ...notificationCommon,
    type: z.literal('pix.received'),
    paid_at: isoDateTime,
    amount_brl: brlAmount,
  }),
  z.object({
    ...notificationCommon,
    type: z.literal('settlement.completed'),
    tx_hash: z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'a 32-byte transaction hash'),
    amount_usdt: usdtAmount,
    chain_id: z.number().int().positive(),
    confirmed_at: isoDateTime,
  }),
  z.object({
    ...notificationCommon,
    type: z.literal('settlement.failed'),
    failure_reason: z.string().max(2000),
  }),
]);

/** HTTP client of the payment provider. Every answer is validated; nothing unvalidated leaves this module. */
export function createHttpProvider(opts: HttpProviderOptions): PaymentProvider {
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const secrets = opts.apiKey ? [opts.apiKey] : [];

  interface CallSpec<T extends z.ZodType> {
    operation: string;
    method: 'GET' | 'POST' | 'PATCH';
    path: string;
    body?: unknown;
    schema: T;
    /** Secrets besides the API key that must not reach an error message (a notification token). */
    redact?: string[];
    /** Maps a 404 to a code of its own. */
    notFoundCode?: string;
    /** Machine-readable `code`s of a 409 body that become the error's code (the rest are `conflict`). */
    conflictCodes?: readonly string[];
  }

  async function call<T extends z.ZodType>(spec: CallSpec<T>): Promise<z.infer<T>> {
    const started = performance.now();
    let status: number | undefined;
    try {
      const res = await send(spec);
      status = res.status;
      const text = await readText(res, spec.operation);
      if (!res.ok) throw statusError(spec, res.status, text, [...secrets, ...(spec.redact ?? [])]);
      const parsed = spec.schema.safeParse(parseJson(text, spec.operation));
      if (!parsed.success) throw invalid(spec.operation, describeIssues(parsed.error));
      opts.onCall?.({
        operation: spec.operation,
        durationMs: performance.now() - started,
        outcome: 'ok',
        status,
      });
      return parsed.data;
    } catch (err) {
      opts.onCall?.({
        operation: spec.operation,
        durationMs: performance.now() - started,
        outcome: 'error',
        status,
      });
      throw err;
    }
  }

  async function send(spec: CallSpec<z.ZodType>): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await fetch(`${baseUrl}${spec.path}`, {
        method: spec.method,
        headers,
        body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
        // A redirect would send us (and our key) somewhere we did not configure.
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw transportError(spec.operation, err, timeoutMs);
    }
  }

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

/** The answer to PATCH /pix/charges/{charge_id} `{"status": "removed"}`. */
const chargeRemovalBody = z.object({
  charge_id: nonEmpty,
  status: z.literal('removed'),
  removed_at: isoDateTime,
});
