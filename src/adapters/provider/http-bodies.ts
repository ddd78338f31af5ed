import { z } from 'zod';

/**
 * The provider API's answers (docs/provider-api.md) as the client takes them: every body is validated
 * against its schema here before anything of it is used.
 */

const isoDateTime = z.iso.datetime({ offset: true });
const nonEmpty = z.string().min(1).max(512);
const brlAmount = z.string().regex(/^\d{1,15}\.\d{2}$/, 'a BRL amount with 2 decimals');
const usdtAmount = z.string().regex(/^\d{1,15}(\.\d{1,6})?$/, 'a USDT amount with at most 6 decimals');

export const quoteBody = z.object({
  pair: z.literal('USDT-BRL'),
  rate: z
    .string()
    .regex(/^\d{1,9}(\.\d{1,12})?$/, 'a decimal rate')
    .refine((r) => /[1-9]/.test(r), 'a positive rate'),
  quoted_at: isoDateTime,
});

export const chargeBody = z.object({
  charge_id: nonEmpty,
  external_id: nonEmpty,
  amount_brl: brlAmount,
  // An EMV BR Code is at most 512 characters.
  pix_copy_paste: z.string().min(20).max(512),
  expires_at: isoDateTime,
});

export const chargeStatusBody = z
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
export const settlementBody = z
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
export const settlementStatusBody = z
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
export const returnBody = z
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

export const notificationBody = z.discriminatedUnion('type', [
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

/** The answer to PATCH /pix/charges/{charge_id} `{"status": "removed"}`. */
export const chargeRemovalBody = z.object({
  charge_id: nonEmpty,
  status: z.literal('removed'),
  removed_at: isoDateTime,
});
