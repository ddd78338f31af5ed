import { z } from 'zod';
import { centavosFromJsonNumber, formatCentavos, MoneyFormatError } from '../../domain/money';
import { PAYOUT_STATUSES } from '../../domain/payout';
import { normalizePixKey, normalizePixKeyType, PIX_KEY_TYPES, pixKeyError } from '../../domain/pix-key';
import { checksumWallet, receiverWalletError } from '../../domain/wallet';

/** `<field> is required` when absent, `<field> must be a <type>` when of the wrong JSON type. */
const typed = (field: string, type: string) => ({
  error: (issue: { input?: unknown }) =>
    issue.input === undefined ? `${field} is required` : `${field} must be a ${type}`,
});

/** JSON.parse turns 1e400 into Infinity, which z.number refuses as a type: say what is wrong with it. */
const amountTypeError = (maxText: string) => ({
  error: (issue: { input?: unknown }) =>
    issue.input === Infinity
      ? `amount_brl must be at most ${maxText}`
      : issue.input === -Infinity
        ? 'amount_brl must be > 0'
        : typed('amount_brl', 'number').error(issue),
});

/**
 * Body of POST /v1/payouts. Validation and normalisation in one place: amounts become integer
 * centavos, the PIX key type upper case, the wallet its EIP-55 form. Messages name the field.
 */
export function createPayoutBodySchema(maxCentavos: bigint) {
  const maxText = formatCentavos(maxCentavos);
  return z
    .object(
      {
        amount_brl: z.number(amountTypeError(maxText)).transform((value, ctx) => {
          if (!(value > 0)) {
            ctx.addIssue({ code: 'custom', message: 'amount_brl must be > 0' });
            return z.NEVER;
          }
          try {
            const centavos = centavosFromJsonNumber(value);
            if (centavos > maxCentavos) {
              ctx.addIssue({ code: 'custom', message: `amount_brl must be at most ${maxText}` });
              return z.NEVER;
            }
            return centavos;
          } catch (err) {
            if (!(err instanceof MoneyFormatError)) throw err;
            ctx.addIssue({ code: 'custom', message: err.message });
            return z.NEVER;
          }
        }),
        receiver_wallet: z.string(typed('receiver_wallet', 'string')).transform((value, ctx) => {
          const problem = receiverWalletError(value);
          if (problem) {
            ctx.addIssue({ code: 'custom', message: problem });
            return z.NEVER;
          }
          return checksumWallet(value);
        }),
        pix_key: z.string(typed('pix_key', 'string')).min(1, 'pix_key must not be empty'),
        pix_key_type: z.string(typed('pix_key_type', 'string')).transform((value, ctx) => {
          const type = normalizePixKeyType(value);
          if (!type) {
            ctx.addIssue({
              code: 'custom',
              message: `pix_key_type must be one of ${PIX_KEY_TYPES.join(', ')}`,
            });
            return z.NEVER;
          }
          return type;
        }),
      },
      { error: 'request body must be a JSON object' },
    )
    .transform((body, ctx) => {
      const problem = pixKeyError(body.pix_key_type, body.pix_key);
      if (problem) {
        ctx.addIssue({ code: 'custom', path: ['pix_key'], message: problem });
        return z.NEVER;
      }
      return { ...body, pix_key: normalizePixKey(body.pix_key_type, body.pix_key) };
    });
}

export type CreatePayoutBody = z.output<ReturnType<typeof createPayoutBodySchema>>;

export const idempotencyKeySchema = z
  .string()
  .regex(/^[\x20-\x7e]{1,255}$/, 'Idempotency-Key must be 1-255 printable ASCII characters');

export const payoutIdParamsSchema = z.object({ id: z.string() });

/** The partner-facing Payout (SPEC.md), for the OpenAPI document and response serialisation. */
export const payoutResponseSchema = z.object({
  id: z.uuid(),
  partner_id: z.string(),
  status: z.enum(PAYOUT_STATUSES),
  amount_brl: z.number(),
  min_amount_usdt: z.number(),
  settled_amount_usdt: z.number(),
  pix_key: z.string(),
  pix_key_type: z.enum(PIX_KEY_TYPES),
  receiver_wallet: z.string(),
  pix_copy_paste: z.string(),
  blockchain_network: z.string(),
  blockchain_chain_id: z.number().int(),
  blockchain_tx_id: z.string(),
  block_explorer_url: z.string(),
  paid_at: z.string().optional(),
  confirmed_at: z.string().optional(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const errorBodySchema = z.object({ error: z.string() });
