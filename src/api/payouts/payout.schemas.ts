import { z } from 'zod';
import {
  centavosFromJsonNumber,
  centavosToNumber,
  formatCentavos,
  MoneyFormatError,
} from '../../domain/money';
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
 * `amount_brl` as a JSON number, to integer centavos: > 0, at most 2 decimals (more is refused, never
 * rounded), at most `maxCentavos`. One definition for POST /v1/payouts and GET /v1/quotes, so both
 * accept the same amounts with the same messages.
 */
export function amountBrlSchema(maxCentavos: bigint) {
  const maxText = formatCentavos(maxCentavos);
  return z
    .number(amountTypeError(maxText))
    .transform((value, ctx) => {
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
    })
    .meta({
      description:
        `BRL amount charged by PIX: > 0, at most ${maxText}, at most 2 decimal places as written ` +
        '(10.001 is refused, never rounded). It must also buy at least 0.01 USDT at the current ' +
        'rate (a floor of a few centavos), else 400 `amount_brl is too small: ...`.',
      exclusiveMinimum: 0,
      maximum: centavosToNumber(maxCentavos),
      multipleOf: 0.01,
    });
}

/**
 * Body of POST /v1/payouts. Validation and normalisation in one place: amounts become integer
 * centavos, the PIX key type upper case, the wallet its EIP-55 form. Messages name the field.
 */
export function createPayoutBodySchema(maxCentavos: bigint) {
  // The metadata below is what the OpenAPI document says of each field; the checks in the
  // transforms are what the server enforces, and the two say the same thing.
  return z
    .object(
      {
        amount_brl: amountBrlSchema(maxCentavos),
        receiver_wallet: z
          .string(typed('receiver_wallet', 'string'))
          .transform((value, ctx) => {
            const problem = receiverWalletError(value);
            if (problem) {
              ctx.addIssue({ code: 'custom', message: problem });
              return z.NEVER;
            }
            return checksumWallet(value);
          })
          .meta({
            description:
              'EVM address (0x + 40 hex digits) that receives the USDT; mixed case must pass the ' +
              'EIP-55 checksum, the zero address is refused. Returned in checksummed form.',
            pattern: '^0x[0-9a-fA-F]{40}$',
          }),
        pix_key: z
          .string(typed('pix_key', 'string'))
          .min(1, 'pix_key must not be empty')
          .meta({
            description:
              "The payer's PIX key, exactly as the key type wants it (no spaces, no punctuation): " +
              'CPF 11 digits; CNPJ 14 digits, or the alphanumeric CNPJ (12 digits or letters, any ' +
              'case, then 2 check digits; returned upper-case); EMAIL an e-mail address of at most ' +
              '77 characters; PHONE 10-11 digits with an optional +55; RANDOM a UUID.',
            examples: ['12345678909', '12ABC34501DE35', 'maria@example.com', '+5511987654321'],
          }),
        pix_key_type: z
          .string(typed('pix_key_type', 'string'))
          .transform((value, ctx) => {
            const type = normalizePixKeyType(value);
            if (!type) {
              ctx.addIssue({
                code: 'custom',
                message: `pix_key_type must be one of ${PIX_KEY_TYPES.join(', ')}`,
              });
              return z.NEVER;
            }
            return type;
          })
          .meta({
            description: `Type of pix_key: one of ${PIX_KEY_TYPES.join(', ')}, in any case (returned upper-case).`,
            pattern: `^(${PIX_KEY_TYPES.map(anyCase).join('|')})$`,
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

/** A pattern matching `word` in any letter case ("cpf" -> "[Cc][Pp][Ff]"); JSON Schema has no /i flag. */
export function anyCase(word: string): string {
  return [...word].map((c) => `[${c.toUpperCase()}${c.toLowerCase()}]`).join('');
}

export type CreatePayoutBody = z.output<ReturnType<typeof createPayoutBodySchema>>;

export const IDEMPOTENCY_KEY_MESSAGE = 'Idempotency-Key must be 1-255 printable ASCII characters';
export const idempotencyKeySchema = z.string().regex(/^[\x20-\x7e]{1,255}$/, IDEMPOTENCY_KEY_MESSAGE);

export const payoutIdParamsSchema = z.object({ id: z.string() });

const UUID_EXAMPLE = 'b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
const TX_EXAMPLE = '0x8f3a52c1d9e04b7a6f2e1d0c9b8a7f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6';
const dateTime = (description: string, example: string) =>
  z.string().meta({ description, format: 'date-time', examples: [example] });

/** The partner-facing Payout (docs/api.md), for the OpenAPI document and response serialisation. */
export const payoutResponseSchema = z.object({
  id: z.string().meta({ description: 'Payout id (UUID v4)', format: 'uuid', examples: [UUID_EXAMPLE] }),
  partner_id: z.string().meta({
    description: 'Partner account that owns the payout',
    format: 'uuid',
    examples: ['6a1e9f0b-2c3d-4e5f-8a9b-0c1d2e3f4a5b'],
  }),
  status: z.enum(PAYOUT_STATUSES).meta({
    description:
      'PENDING: PIX charge created, awaiting payment. PROCESSING: payment received, USDT transfer under ' +
      'way. COMPLETED: USDT settled to receiver_wallet. FAILED: the payout could not be completed. ' +
      'COMPLETED and FAILED never change.',
    examples: ['PENDING'],
  }),
  amount_brl: z.number().meta({
    // No multipleOf here: validators test it in binary floating point, where 100.1 / 0.01 is not a
    // whole number, and would refuse the very amounts this field carries.
    description: 'BRL amount charged by PIX, with at most 2 decimal places',
    exclusiveMinimum: 0,
    examples: [150.0],
  }),
  min_amount_usdt: z.number().meta({
    description:
      'Guaranteed minimum USDT for the receiver, fixed at creation: amount_brl / (spot rate x (1 + buffer)), ' +
      'rounded down to 6 decimals',
    minimum: 0,
    examples: [25.728987],
  }),
  settled_amount_usdt: z.number().meta({
    description: 'USDT the receiver got (6 decimals); 0 until COMPLETED',
    minimum: 0,
    examples: [26.724137],
  }),
  pix_key: z.string().meta({
    description: "The payer's PIX key as sent (an alphanumeric CNPJ upper-case)",
    examples: ['12345678909'],
  }),
  pix_key_type: z.enum(PIX_KEY_TYPES).meta({ description: 'Type of pix_key, upper-case', examples: ['CPF'] }),
  receiver_wallet: z.string().meta({
    description: 'EVM address that receives the USDT, EIP-55 checksummed',
    pattern: '^0x[0-9a-fA-F]{40}$',
    examples: ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8'],
  }),
  pix_copy_paste: z.string().meta({
    description: 'EMV PIX copy-and-paste charge (BR Code) the payer pays; only useful while PENDING',
    examples: [
      '00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865406150.00' +
        '5802BR5920PIX SANDBOX PROVIDER6009SAO PAULO62140510a1b2c3d4e56304AB12',
    ],
  }),
  blockchain_network: z.string().meta({
    description: 'Settlement network name ("Arbitrum One"); empty until COMPLETED',
    examples: ['Arbitrum One'],
  }),
  blockchain_chain_id: z
    .number()
    .int()
    .meta({
      description: 'EVM chain id of the settlement network (42161); 0 until COMPLETED',
      minimum: 0,
      examples: [42161],
    }),
  blockchain_tx_id: z.string().meta({
    description: 'Hash of the USDT transfer transaction; empty until COMPLETED',
    examples: [TX_EXAMPLE],
  }),
  block_explorer_url: z.string().meta({
    description: 'The transfer on a block explorer; empty until COMPLETED',
    examples: [`https://arbiscan.io/tx/${TX_EXAMPLE}`],
  }),
  paid_at: dateTime(
    'When the provider received the PIX payment (UTC). Present only on COMPLETED payouts',
    '2026-07-01T12:03:10.000Z',
  ).optional(),
  confirmed_at: dateTime(
    'When the settlement was confirmed (UTC). Present only on COMPLETED payouts',
    '2026-07-01T12:04:02.000Z',
  ).optional(),
  created_at: dateTime('Creation time (UTC)', '2026-07-01T12:00:00.000Z'),
  updated_at: dateTime('Time of the last change (UTC)', '2026-07-01T12:04:02.000Z'),
});

export const errorBodySchema = z.object({
  error: z.string().meta({
    description: 'What went wrong, for a human; the exact texts are listed with each status code',
    examples: ['amount_brl must be > 0'],
  }),
});
