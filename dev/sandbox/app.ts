import { createHash, timingSafeEqual } from 'node:crypto';

import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { getAddress, isAddress } from 'viem';
import { z } from 'zod';

import { BrCodeError, encodeBrCode, parseBrCode } from '../../src/domain/brcode';
import { formatCentavos, parseDecimal } from '../../src/domain/money';
import { API_PIX_FAULT_ROUTES, type ApiPixFaultRoute, type FaultRegistry } from './api-pix/faults';
import { Problem } from './api-pix/problem';
import type { ApiPixPsp } from './api-pix/psp';
import type { SandboxConfig } from './config';
import { createSettlementRunner, createUsdtSender, settleablePayment, type UsdtSender } from './settlement';
import {
  newId,
  SandboxState,
  txidOf,
  type Charge,
  type NotificationInput,
  type PaymentOutcome,
  type Settlement,
} from './state';
import { createReturnDesk, payerReturnsView, returnRequest, ReturnRefused } from './returns';
import { createWebhookDispatcher, type WebhookOptions } from './webhooks';

export interface SandboxDeps {
  /** A pino logger; default: fastify's own at config.logLevel. */
  logger?: FastifyBaseLogger;
  now?: () => Date;
  /** Default: built from config when SANDBOX_USDT_ADDRESS and SANDBOX_WALLET_PRIVATE_KEY are set. */
  usdtSender?: UsdtSender;
  /** Retry tuning of webhook delivery (tests shorten it). */
  webhook?: Partial<Omit<WebhookOptions, 'url' | 'logger'>>;
  /** The state shared with the API Pix face; default: its own (SANDBOX_STATE_FILE or memory). */
  state?: SandboxState;
  /** From a provider API return's request to its final status; default 1 s. */
  returnDelayMs?: number;
  /** The API Pix face's PSP, when that face runs: the payer pays its dynamic codes here too. */
  apiPix?: { psp: ApiPixPsp; faults: FaultRegistry };
}

/** An error with the status and `{"error"}` message (and machine-readable `code`) the sandbox answers with. */
class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

const PIX_KEY_TYPES = ['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'RANDOM'] as const;
const MAX_EXPIRY_SECONDS = 30 * 24 * 3600;
const BODY_LIMIT_BYTES = 16 * 1024;

const externalId = z.string().min(1).max(255);
const brlAmount = z
  .string()
  .regex(/^(0|[1-9]\d{0,11})\.\d{2}$/, 'must be a decimal string with 2 places, e.g. "100.00"')
  .refine((s) => s !== '0.00', 'must be > 0');

const chargeRequest = z.object({
  external_id: externalId,
  amount_brl: brlAmount,
  payer_pix_key: z.string().min(1).max(77),
  payer_pix_key_type: z.enum(PIX_KEY_TYPES),
  expires_in_seconds: z.number().int().min(1).max(MAX_EXPIRY_SECONDS),
});

const settlementRequest = z.object({
  external_id: externalId,
  charge_id: z.string().min(1).max(64),
  receiver_wallet: z.string().refine((s) => isAddress(s), 'must be an EVM address'),
  chain_id: z.number().int().positive(),
});

const paymentRequest = z.object({
  pix_copy_paste: z.string().min(1).max(1024),
  outcome: z.enum(['settled', 'settlement_failed']).default('settled'),
  // What the payer actually pays: a banking app lets the payer edit a static code's amount.
  amount_brl: z
    .number()
    .positive()
    .max(1e12)
    .refine((n) => Math.abs(n * 100 - Math.round(n * 100)) < 1e-6, {
      message: 'must have at most 2 decimal places',
    })
    .optional(),
  // false: the payment happens but its webhook is never delivered (a lost notification).
  notify: z.boolean().default(true),
  // API Pix only: the payer's message to the receiver (the Pix's infoPagador).
  info_pagador: z.string().min(1).max(140).optional(),
});

const redeliveryRequest = z.object({ event_id: z.string().min(1).max(64) });

/** The provider routes a test can make fail, as the docs name them, to fastify's route patterns. */
const FAULT_ROUTES = {
  'GET /fx/quote': 'GET /fx/quote',
  'POST /pix/charges': 'POST /pix/charges',
  'GET /pix/charges/{charge_id}': 'GET /pix/charges/:chargeId',
  'PATCH /pix/charges/{charge_id}': 'PATCH /pix/charges/:charge_id',
  'POST /settlements': 'POST /settlements',
  'GET /settlements/{settlement_id}': 'GET /settlements/:settlementId',
  'GET /pix/notification/{token}': 'GET /pix/notification/:token',
  'POST /pix/returns': 'POST /pix/returns',
  'GET /pix/returns/{return_id}': 'GET /pix/returns/:returnId',
} as const;
type FaultRoute = keyof typeof FAULT_ROUTES;
type AnyFaultRoute = FaultRoute | ApiPixFaultRoute;

const faultRequest = z.object({
  route: z.enum([...Object.keys(FAULT_ROUTES), ...Object.keys(API_PIX_FAULT_ROUTES)] as [
    AnyFaultRoute,
    ...AnyFaultRoute[],
  ]),
  status: z.number().int().min(400).max(599),
  count: z.number().int().min(1).max(10_000),
});

/**
 * The provider sandbox: the payment provider of docs/provider-api.md, plus the payer
 * (POST /sandbox/payments). It is an outside party to the service and shares none of its code but
 * the pure PIX and money helpers of src/domain. All state is in memory (see state.ts).
 */
export function buildSandboxApp(config: SandboxConfig, deps: SandboxDeps = {}): FastifyInstance {
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: { level: config.logLevel } }),
    bodyLimit: BODY_LIMIT_BYTES,
  });
  const now = deps.now ?? (() => new Date());
  const state =
    deps.state ?? (config.stateFile === undefined ? new SandboxState() : SandboxState.load(config.stateFile));
  const apiPix = deps.apiPix;

  const webhooks = createWebhookDispatcher({ ...deps.webhook, url: config.webhookUrl, logger: app.log });
  const settlements = createSettlementRunner({
    sender: deps.usdtSender ?? defaultSender(config),
    spotRate: config.spotRate,
    spread: config.spread,
    chainId: config.chainId,
    now,
    notify,
    persist: () => state.save(),
    logger: app.log,
  });
  // A restarted sandbox (SANDBOX_STATE_FILE) finishes what it had started: started synchronously, so
  // a transfer it had sent is sent again before any new one can take its nonce.
  for (const settlement of state.allSettlements()) {
    if (settlement.status !== 'pending' && settlement.status !== 'broadcast') continue;
    app.log.info(
      { settlement_id: settlement.settlementId, status: settlement.status },
      'resuming unfinished settlement',
    );
    settlements.start(settlement, state.chargeById(settlement.chargeId));
  }
  const returns = createReturnDesk({ state, now, logger: app.log, delayMs: deps.returnDelayMs });
  app.addHook('onClose', async () => {
    returns.close();
    // Settlements first, so one finishing during shutdown still records its notification (fetchable
    // later) before the webhook loops are stopped.
    await settlements.close();
    await webhooks.close();
  });

  function notify(input: NotificationInput, opts: { eventId?: string; deliver?: boolean } = {}): void {
    const body = state.addNotification(input, opts.eventId);
    app.log.info(
      {
        event_id: body.event_id,
        type: body.type,
        charge_id: body.charge_id,
        delivered: opts.deliver !== false,
      },
      'notification created',
    );
    if (opts.deliver !== false) webhooks.deliver(body.token, { eventId: body.event_id, type: body.type });
  }

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, request, reply) => {
    if (err instanceof HttpError) {
      return reply
        .status(err.statusCode)
        .send({ error: err.message, ...(err.code !== undefined && { code: err.code }) });
    }
    const status = err.statusCode ?? 500;
    if (status >= 500) {
      request.log.error({ err }, 'request failed');
      return reply.status(500).send({ error: 'internal error' });
    }
    const message = err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ? 'invalid JSON body' : err.message;
    return reply.status(status).send({ error: message });
  });
  app.setNotFoundHandler((_request, reply) => reply.status(404).send({ error: 'not found' }));

  const expectedAuth = config.apiKey === undefined ? undefined : digest(`Bearer ${config.apiKey}`);
  function authorize(request: FastifyRequest): void {
    if (expectedAuth === undefined) return;
    const given = digest(request.headers.authorization ?? '');
    // Digests have equal lengths, so the comparison time does not depend on the key.
    if (!timingSafeEqual(given, expectedAuth)) throw new HttpError(401, 'unauthorized');
  }

  // Injected faults (POST /sandbox/faults), by fastify route pattern: the next `remaining` requests to
  // that route are answered `status` before anything else is looked at (the API key included).
  const faults = new Map<string, { route: FaultRoute; status: number; remaining: number }>();
  app.addHook('onRequest', async (request, reply) => {
    const fault = faults.get(`${request.method} ${request.routeOptions.url ?? ''}`);
    if (!fault) return;
    fault.remaining -= 1;
    if (fault.remaining <= 0) faults.delete(FAULT_ROUTES[fault.route]);
    request.log.info({ route: fault.route, status: fault.status }, 'injected fault');
    return reply.status(fault.status).send({ error: `sandbox fault: HTTP ${fault.status}` });
  });

  app.get('/health', async () => ({ status: 'ok' }));

  app.get('/fx/quote', async (request) => {
    authorize(request);
    const { pair } = parse(z.object({ pair: z.literal('USDT-BRL', 'must be USDT-BRL') }), request.query);
    return { pair, rate: config.spotRate, quoted_at: now().toISOString() };
  });

  app.post('/pix/charges', async (request, reply) => {
    authorize(request);
    const req = parse(chargeRequest, request.body);
    const amountCentavos = parseDecimal(req.amount_brl, 2);
    const existing = state.chargeByExternalId(req.external_id);
    if (existing) {
      const same =
        existing.amountCentavos === amountCentavos &&
        existing.payerPixKey === req.payer_pix_key &&
        existing.payerPixKeyType === req.payer_pix_key_type;
      if (!same) throw new HttpError(409, 'external_id already used for a charge with other parameters');
      return reply.status(200).send(chargeView(existing));
    }
    const chargeId = newId('chg');
    const txid = txidOf(chargeId);
    const createdAt = now();
    const charge: Charge = {
      chargeId,
      txid,
      externalId: req.external_id,
      amountCentavos,
      payerPixKey: req.payer_pix_key,
      payerPixKeyType: req.payer_pix_key_type,
      pixCopyPaste: encodeBrCode({
        pixKey: config.pixKey,
        merchantName: config.merchantName,
        merchantCity: config.merchantCity,
        amount: formatCentavos(amountCentavos),
        txid,
      }),
      createdAt,
      expiresAt: new Date(createdAt.getTime() + req.expires_in_seconds * 1000),
      payments: [],
    };
    state.addCharge(charge);
    request.log.info({ charge_id: chargeId, external_id: req.external_id }, 'charge created');
    return reply.status(201).send(chargeView(charge));
  });

  app.post('/settlements', async (request, reply) => {
    authorize(request);
    const req = parse(settlementRequest, request.body);
    const receiverWallet = getAddress(req.receiver_wallet);
    const existing = state.settlementByExternalId(req.external_id);
    if (existing) {
      const same =
        existing.chargeId === req.charge_id &&
        existing.receiverWallet === receiverWallet &&
        existing.chainId === req.chain_id;
      if (!same) throw new HttpError(409, 'external_id already used for a settlement with other parameters');
      return reply.status(202).send(settlementAnswer(existing));
    }
    if (req.chain_id !== config.chainId) throw new HttpError(400, `chain_id must be ${config.chainId}`);
    const charge = state.chargeById(req.charge_id);
    if (!charge) throw new HttpError(404, 'unknown charge');
    // Its own code: the service cannot tell "not paid" from "not paid as far as this replica knows".
    if (!settleablePayment(charge)) throw new HttpError(409, 'charge not paid', 'charge_not_paid');
    if (charge.settlementId) throw new HttpError(409, 'charge already has a settlement');
    if (settleablePayment(charge)?.outcome === 'settled' && !settlements.canSendUsdt) {
      // Retryable on purpose: the operator can start the sandbox with a wallet and the service retries.
      throw new HttpError(
        503,
        'settlement unavailable: SANDBOX_USDT_ADDRESS / SANDBOX_WALLET_PRIVATE_KEY not set',
      );
    }
    const settlement: Settlement = {
      settlementId: newId('stl'),
      externalId: req.external_id,
      chargeId: charge.chargeId,
      receiverWallet,
      chainId: req.chain_id,
      status: 'pending',
      updatedAt: now(),
    };
    charge.settlementId = settlement.settlementId;
    state.addSettlement(settlement);
    request.log.info(
      { settlement_id: settlement.settlementId, charge_id: charge.chargeId },
      'settlement accepted',
    );
    settlements.start(settlement, charge);
    return reply.status(202).send(settlementAnswer(settlement));
  });

  // The settlement as the provider knows it now: how the service learns an outcome whose webhook
  // never came. A settlement this sandbox does not know (forgotten by a restart without
  // SANDBOX_STATE_FILE) is 404: it says it does not know rather than anything about the USDT.
  app.get<{ Params: { settlementId: string } }>('/settlements/:settlementId', async (request) => {
    authorize(request);
    const settlement = state.settlementById(request.params.settlementId);
    if (!settlement) throw new HttpError(404, 'unknown settlement');
    return {
      settlement_id: settlement.settlementId,
      external_id: settlement.externalId,
      charge_id: settlement.chargeId,
      receiver_wallet: settlement.receiverWallet,
      chain_id: settlement.chainId,
      status: settlement.status,
      tx_hash: settlement.txHash ?? null,
      amount_usdt: settlement.amountUsdt ?? null,
      failure_reason: settlement.failureReason ?? null,
      updated_at: settlement.updatedAt.toISOString(),
    };
  });

  // Modelled on BCB's Pix API GET /cob/{txid}: the charge and every payment received on it.
  app.get<{ Params: { chargeId: string } }>('/pix/charges/:chargeId', async (request) => {
    authorize(request);
    const charge = state.chargeById(request.params.chargeId);
    if (!charge) throw new HttpError(404, 'unknown charge');
    const first = charge.payments[0];
    const status = first
      ? 'paid'
      : charge.removedAt
        ? 'removed'
        : now().getTime() > charge.expiresAt.getTime()
          ? 'expired'
          : 'active';
    return {
      charge_id: charge.chargeId,
      external_id: charge.externalId,
      amount_brl: formatCentavos(charge.amountCentavos),
      status,
      expires_at: charge.expiresAt.toISOString(),
      ...(first && {
        paid_at: first.paidAt.toISOString(),
        paid_amount_brl: formatCentavos(first.amountCentavos),
      }),
      payments: charge.payments.map((p) => ({
        event_id: p.eventId,
        amount_brl: formatCentavos(p.amountCentavos),
        paid_at: p.paidAt.toISOString(),
      })),
    };
  });

  app.get<{ Params: { token: string } }>('/pix/notification/:token', async (request, reply) => {
    authorize(request);
    const body = state.notification(request.params.token);
    if (!body) return reply.status(404).send({ error: 'unknown notification' });
    return body;
  });

  // A received payment sent back to its payer, idempotent on the service's refund id.
  app.post('/pix/returns', async (request, reply) => {
    authorize(request);
    const req = parse(returnRequest, request.body);
    const { created, body } = returnCall(() => returns.request(req));
    return reply.status(created ? 201 : 200).send(body);
  });
  app.get<{ Params: { returnId: string } }>('/pix/returns/:returnId', async (request) => {
    authorize(request);
    return returnCall(() => returns.get(request.params.returnId));
  });

  function returnCall<T>(run: () => T): T {
    try {
      return run();
    } catch (err) {
      if (err instanceof ReturnRefused) throw new HttpError(err.statusCode, err.message, err.code);
      throw err;
    }
  }

  // The payer's bank. Not part of the provider API, so it takes no provider API key.
  app.post('/sandbox/payments', async (request, reply) => {
    const req = parse(paymentRequest, request.body);
    const parsed = parseCode(req.pix_copy_paste);
    if (parsed.merchantAccount.url !== undefined) {
      // A dynamic code: an API Pix cob, found by its location.
      if (!apiPix) throw new HttpError(404, 'unknown charge');
      const pix = payerCall(() =>
        apiPix.psp.pay({
          location: parsed.merchantAccount.url ?? '',
          codeAmount: parsed.transactionAmount,
          paidCentavos: req.amount_brl === undefined ? undefined : BigInt(Math.round(req.amount_brl * 100)),
          infoPagador: req.info_pagador,
          notify: req.notify,
        }),
      );
      return reply.status(202).send({
        txid: pix.txid,
        end_to_end_id: pix.endToEndId,
        event_id: pix.endToEndId,
        status: 'accepted',
      });
    }
    const charge = chargeForCode(parsed);
    if (charge.removedAt) throw new HttpError(410, 'charge was removed by the receiver');
    const amountCentavos =
      req.amount_brl === undefined ? charge.amountCentavos : BigInt(Math.round(req.amount_brl * 100));
    const paidAt = now();
    const payment = { eventId: newId('evt'), paidAt, amountCentavos, outcome: req.outcome as PaymentOutcome };
    // A static code can be paid again (and with an edited amount): the provider records every
    // payment and reports each one; the service decides which one settles.
    charge.payments.push(payment);
    state.save();
    // A bank does not know about the provider's expiry: a late payment goes through, and it is the
    // service's job to refund it. Logged so a demo shows why such a payout does not settle.
    const late = paidAt.getTime() > charge.expiresAt.getTime();
    request.log.info(
      {
        charge_id: charge.chargeId,
        event_id: payment.eventId,
        amount_brl: formatCentavos(amountCentavos),
        outcome: req.outcome,
        late,
        notify: req.notify,
      },
      'payment received',
    );
    notify(
      {
        type: 'pix.received',
        charge_id: charge.chargeId,
        external_id: charge.externalId,
        occurred_at: paidAt.toISOString(),
        paid_at: paidAt.toISOString(),
        amount_brl: formatCentavos(amountCentavos),
      },
      { eventId: payment.eventId, deliver: req.notify },
    );
    return reply
      .status(202)
      .send({ charge_id: charge.chargeId, event_id: payment.eventId, status: 'accepted' });
  });

  // The provider's operator re-sends an event (as after an outage on its side): the same event, with
  // the same event_id, under a new notification token.
  app.post('/sandbox/notifications/redeliver', async (request, reply) => {
    const req = parse(redeliveryRequest, request.body);
    // An endToEndId: the API Pix face pushes that Pix again.
    if (apiPix && payerCall(() => apiPix.psp.redeliver(req.event_id))) {
      request.log.info({ end_to_end_id: req.event_id }, 'pix redelivered');
      return reply.status(202).send({ event_id: req.event_id, status: 'accepted' });
    }
    const body = state.reissueNotification(req.event_id);
    if (!body) throw new HttpError(404, 'unknown event');
    request.log.info({ event_id: body.event_id, type: body.type }, 'notification redelivered');
    webhooks.deliver(body.token, { eventId: body.event_id, type: body.type });
    return reply.status(202).send({ event_id: body.event_id, status: 'accepted' });
  });

  // Test control: make a provider route answer an error for its next `count` requests, as a provider
  // outage, a rotated key or a lagging replica would. Not part of the provider API: no API key.
  app.post('/sandbox/faults', async (request, reply) => {
    const req = parse(faultRequest, request.body);
    if (req.route in API_PIX_FAULT_ROUTES) {
      if (!apiPix) throw new HttpError(400, 'route: the API Pix face is not running (SANDBOX_API_PIX_PORT)');
      const pattern = API_PIX_FAULT_ROUTES[req.route as ApiPixFaultRoute];
      apiPix.faults.arm(pattern, { route: req.route, status: req.status, remaining: req.count });
    } else {
      const route = req.route as FaultRoute;
      faults.set(FAULT_ROUTES[route], { route, status: req.status, remaining: req.count });
    }
    request.log.info(req, 'fault armed');
    return reply.status(201).send({ route: req.route, status: req.status, remaining: req.count });
  });
  app.get('/sandbox/faults', async () => ({
    faults: [...faults.values(), ...(apiPix?.faults.list() ?? [])].map((f) => ({
      route: f.route,
      status: f.status,
      remaining: f.remaining,
    })),
  }));
  app.delete('/sandbox/faults', async () => {
    const cleared = faults.size + (apiPix?.faults.clear() ?? 0);
    faults.clear();
    return { cleared };
  });

  // Test controls: what the payer got back (one entry per return that reached the payer, from either
  // face: a DEVOLVIDO devolução or a returned provider API return), and returns that will fail.
  app.get('/sandbox/returns', async () => ({ returns: payerReturnsView(state) }));
  app.post('/sandbox/returns/refuse', async (request, reply) => {
    const req = parse(z.object({ count: z.number().int().min(0).max(10_000) }), request.body);
    returns.refuseNext(req.count);
    return reply.status(201).send({ refuse_next: req.count });
  });
  app.post('/sandbox/devolucoes/refuse', async (request, reply) => {
    const req = parse(z.object({ count: z.number().int().min(0).max(10_000) }), request.body);
    if (!apiPix) throw new HttpError(404, 'the API Pix face is not running (SANDBOX_API_PIX_PORT)');
    apiPix.psp.refuseNextDevolucoes(req.count);
    return reply.status(201).send({ refuse_next: req.count });
  });

  /** The API Pix PSP's refusals of the payer, as this face's errors. */
  function payerCall<T>(run: () => T): T {
    try {
      return run();
    } catch (err) {
      if (err instanceof Problem) throw new HttpError(err.status, err.message);
      throw err;
    }
  }

  function parseCode(code: string): ReturnType<typeof parseBrCode> {
    try {
      return parseBrCode(code.trim());
    } catch (err) {
      if (err instanceof BrCodeError)
        throw new HttpError(400, `pix_copy_paste is not a valid BR Code: ${err.message}`);
      throw err;
    }
  }

  function chargeForCode(parsed: ReturnType<typeof parseBrCode>): Charge {
    // A code paying another key, or without our txid, is not one of this provider's charges.
    const charge =
      parsed.merchantAccount.key === config.pixKey && parsed.txid !== undefined
        ? state.chargeByTxid(parsed.txid)
        : undefined;
    if (!charge) throw new HttpError(404, 'unknown charge');
    if (
      parsed.transactionAmount === undefined ||
      parseDecimal(parsed.transactionAmount, 2) !== charge.amountCentavos
    ) {
      // A tampered code: the amount to pay another amount is amount_brl, not an edited code.
      throw new HttpError(400, 'pix_copy_paste amount does not match the charge');
    }
    return charge;
  }

  // Removal of an unpaid charge by the receiver, as BCB's Pix API `PATCH /cob/{txid}` with status
  // REMOVIDA_PELO_USUARIO_RECEBEDOR. A charge paid its amount stays paid (409): the payment came first.
  // A payment of another amount does not pay the charge (it is refunded, never settled), so it does
  // not stop the removal: the charge is removed and that payment stays what it was.
  app.patch<{ Params: { charge_id: string } }>('/pix/charges/:charge_id', async (request) => {
    authorize(request);
    parse(chargeRemovalRequest, request.body);
    const charge = state.chargeById(request.params.charge_id);
    if (!charge) throw new HttpError(404, 'unknown charge');
    if (settleablePayment(charge)) throw new HttpError(409, 'charge already paid');
    if (!charge.removedAt) {
      charge.removedAt = now();
      state.save();
      request.log.info({ charge_id: charge.chargeId }, 'charge removed');
    }
    return { charge_id: charge.chargeId, status: 'removed', removed_at: charge.removedAt.toISOString() };
  });

  return app;
}

const chargeRemovalRequest = z.object({ status: z.literal('removed', 'must be "removed"') });

/** The answer to POST /settlements, first or repeated: the settlement's status now. */
function settlementAnswer(settlement: Settlement) {
  return {
    settlement_id: settlement.settlementId,
    status: settlement.status,
    tx_hash: settlement.txHash ?? null,
    amount_usdt: settlement.amountUsdt ?? null,
  };
}

function chargeView(charge: Charge) {
  return {
    charge_id: charge.chargeId,
    external_id: charge.externalId,
    amount_brl: formatCentavos(charge.amountCentavos),
    pix_copy_paste: charge.pixCopyPaste,
    expires_at: charge.expiresAt.toISOString(),
  };
}

function parse<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  throw new HttpError(400, `${where}${issue?.message ?? 'invalid request'}`);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function defaultSender(config: SandboxConfig): UsdtSender | undefined {
  if (config.usdtAddress === undefined || config.walletPrivateKey === undefined) return undefined;
  return createUsdtSender({
    rpcUrl: config.evmRpcUrl,
    chainId: config.chainId,
    usdtAddress: config.usdtAddress,
    privateKey: config.walletPrivateKey,
  });
}
