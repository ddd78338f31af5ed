import { z } from 'zod';

import { sameExternalId } from '../../domain/ids';
import { formatCentavos, parseDecimal } from '../../domain/money';
import type { ProviderEvent } from '../../domain/provider-event';
import { ProviderError, type PaymentProvider } from './types';

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
/** Enough of a provider error body to diagnose, bounded so a huge page cannot flood the logs. */
const MAX_ERROR_TEXT = 200;

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

async function readText(res: Response, operation: string): Promise<string> {
  try {
    return await res.text();
  } catch (err) {
    // The timeout signal also covers the body: a provider that stalls mid-body is a timeout.
    throw transportError(operation, err, undefined);
  }
}

function parseJson(text: string, operation: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalid(operation, 'body is not JSON');
  }
}

function invalid(operation: string, detail: string): ProviderError {
  return new ProviderError(
    `provider ${operation}: malformed response (${detail})`,
    'invalid_response',
    false,
  );
}

function describeIssues(error: z.ZodError): string {
  // Paths and messages only: received values could be anything, including secrets.
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
    .join('; ');
}

function transportError(operation: string, err: unknown, timeoutMs: number | undefined): ProviderError {
  // Duck-typed on purpose: fetch's errors come from Node's internals and may belong to another realm
  // (a vm context, jest), where `instanceof Error` is false.
  const { name, message, cause } = errorFields(err);
  if (name === 'TimeoutError' || name === 'AbortError') {
    const after = timeoutMs === undefined ? '' : ` after ${timeoutMs} ms`;
    return new ProviderError(`provider ${operation}: timed out${after}`, 'timeout', true);
  }
  // undici reports "fetch failed" and puts the socket error (ECONNREFUSED ...) in `cause`; its code
  // says enough and, unlike a URL, never carries the notification token.
  const causeCode = errorFields(cause).code;
  const reason = causeCode ?? message ?? 'unknown error';
  return new ProviderError(`provider ${operation}: network error (${reason})`, 'network_error', true);
}

function errorFields(err: unknown): { name?: string; message?: string; code?: string; cause?: unknown } {
  if (typeof err !== 'object' || err === null) return {};
  const e = err as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { name: text(e.name), message: text(e.message), code: text(e.code), cause: e.cause };
}

function statusError(
  spec: { operation: string; notFoundCode?: string; conflictCodes?: readonly string[] },
  status: number,
  bodyText: string,
  secrets: string[],
): ProviderError {
  let [code, retryable] = classifyStatus(status, spec.notFoundCode);
  const bodyCode = status === 409 ? errorBodyField(bodyText, 'code') : undefined;
  if (bodyCode !== undefined && spec.conflictCodes?.includes(bodyCode)) [code, retryable] = [bodyCode, false];
  const detail = errorText(bodyText, secrets);
  const message = `provider ${spec.operation}: HTTP ${status}${detail ? ` (${detail})` : ''}`;
  return new ProviderError(message, code, retryable, status);
}

/** The retry policy of the whole service towards the provider lives in this one table. */
export function classifyStatus(
  status: number,
  notFoundCode = 'not_found',
): [code: string, retryable: boolean] {
  if (status >= 500) return ['server_error', true];
  if (status === 408) return ['timeout', true];
  if (status === 429) return ['rate_limited', true];
  if (status === 401 || status === 403) return ['unauthorized', false];
  if (status === 404) return [notFoundCode, false];
  if (status === 409) return ['conflict', false];
  if (status >= 400) return ['bad_request', false];
  return ['unexpected_status', false];
}

/** A string field of a JSON error body; undefined for any other body (a proxy's HTML page, say). */
function errorBodyField(bodyText: string, field: 'error' | 'code'): string | undefined {
  try {
    const parsed = JSON.parse(bodyText) as unknown;
    if (parsed && typeof parsed === 'object' && field in parsed) {
      const value = (parsed as Record<string, unknown>)[field];
      if (typeof value === 'string') return value;
    }
  } catch {
    // Not JSON.
  }
  return undefined;
}

function errorText(bodyText: string, secrets: string[]): string {
  // Not JSON (a proxy's HTML page, say): keep the raw text, truncated below.
  let text = errorBodyField(bodyText, 'error') ?? bodyText;
  // Redact before truncating, so a secret cut in half cannot slip through.
  text = redact(text, secrets);
  // eslint-disable-next-line no-control-regex
  text = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return text.length > MAX_ERROR_TEXT ? `${text.slice(0, MAX_ERROR_TEXT)}...` : text;
}

function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('[redacted]');
  return out;
}

/** The answer to PATCH /pix/charges/{charge_id} `{"status": "removed"}`. */
const chargeRemovalBody = z.object({
  charge_id: nonEmpty,
  status: z.literal('removed'),
  removed_at: isoDateTime,
});
