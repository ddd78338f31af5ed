import { z } from 'zod';
import { centavosFromJsonNumberText, MoneyFormatError } from '../../domain/money';
import { amountBrlSchema } from '../payouts/payout.schemas';

// The grammar of a JSON number: the query value is read exactly as POST's body would read it.
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/**
 * Query of GET /v1/quotes. `amount_brl` is the text of a JSON number, parsed as JSON.parse would
 * parse it and then validated by POST /v1/payouts' own amount schema: the same amounts pass, with
 * the same messages.
 */
export function quoteQuerySchema(maxCentavos: bigint) {
  return z.strictObject(
    {
      amount_brl: z
        .string({
          error: (issue) =>
            issue.input === undefined
              ? 'amount_brl is required'
              : Array.isArray(issue.input)
                ? 'amount_brl must be given once'
                : 'amount_brl must be a number',
        })
        .regex(JSON_NUMBER, 'amount_brl must be a number')
        .superRefine((text, ctx) => {
          // As POST's body parser does: decimals are judged on the digits sent, since Number() would
          // round 10.0000000000000001 to 10. Other refusals are worded by the amount schema.
          const value = Number(text);
          if (!(value > 0) || !Number.isFinite(value)) return;
          try {
            centavosFromJsonNumberText(text);
          } catch (err) {
            if (!(err instanceof MoneyFormatError)) throw err;
            ctx.addIssue({ code: 'custom', message: err.message, abort: true });
          }
        })
        .transform(Number)
        .pipe(amountBrlSchema(maxCentavos)),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `unknown query parameter ${issue.keys[0]}; accepted: amount_brl`
          : undefined,
    },
  );
}

/** A non-binding preview: POST /v1/payouts fixes its own min_amount_usdt at creation. */
export const quoteResponseSchema = z.object({
  amount_brl: z.number(),
  min_amount_usdt: z.number(),
  expires_at: z.string(),
});
