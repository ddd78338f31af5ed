import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';

import { formatCentavos, parseDecimal } from '../../src/domain/money';
import { newId, type ProviderReturn, type SandboxState } from './state';

/**
 * The provider API's returns (docs/provider-api.md, "Return a received payment"): a received payment
 * sent back to its payer, idempotent on the service's refund id. A return is `returning` for
 * `delayMs`, then `returned` (credited to the payer in the sandbox's record of returns, which the API
 * Pix face's devoluções share) or, when a test asked for it, `refused`.
 */

export const returnRequest = z.object({
  refund_id: z.string().min(1).max(64),
  event_id: z.string().min(1).max(64),
  amount_brl: z
    .string()
    .regex(/^(0|[1-9]\d{0,11})\.\d{2}$/, 'must be a decimal string with 2 places, e.g. "100.00"')
    .refine((s) => s !== '0.00', 'must be > 0'),
  reason: z.string().min(1).max(500),
});

/** A refusal of the request, as the route answers it. */
export class ReturnRefused extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

export function createReturnDesk(opts: {
  state: SandboxState;
  now: () => Date;
  logger: Pick<FastifyBaseLogger, 'info'>;
  delayMs?: number;
}) {
  const { state, now, logger } = opts;
  const delayMs = opts.delayMs ?? 1_000;
  const timers = new Set<NodeJS.Timeout>();
  let refusals = 0;

  function settle(r: ProviderReturn): void {
    if (r.status !== 'returning') return;
    const at = now();
    if (r.refusalReason !== undefined) {
      r.status = 'refused';
      r.updatedAt = at;
      state.save();
    } else {
      r.status = 'returned';
      r.updatedAt = at;
      // Saved with the return's new status: the payer is credited exactly once.
      state.addReturn({
        rtrId: r.returnId,
        endToEndId: r.eventId,
        devolucaoId: r.refundId,
        amountCentavos: r.amountCentavos,
        returnedAt: at,
      });
    }
    logger.info({ return_id: r.returnId, refund_id: r.refundId, status: r.status }, 'return final');
  }

  function schedule(r: ProviderReturn): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      settle(r);
    }, delayMs);
    timers.add(timer);
  }

  // A restarted sandbox (SANDBOX_STATE_FILE) finishes the returns it had accepted.
  for (const r of state.allProviderReturns()) if (r.status === 'returning') schedule(r);

  return {
    /** The return asked for: `created` false for a repeat of its refund id. */
    request(req: z.infer<typeof returnRequest>): { created: boolean; body: ReturnType<typeof returnView> } {
      const amountCentavos = parseDecimal(req.amount_brl, 2);
      const existing = state.providerReturnByRefundId(req.refund_id);
      if (existing) {
        if (existing.eventId !== req.event_id || existing.amountCentavos !== amountCentavos) {
          throw new ReturnRefused(409, 'refund_id already used for a return with other parameters');
        }
        return { created: false, body: returnView(existing) };
      }
      const found = state.paymentByEventId(req.event_id);
      if (!found) throw new ReturnRefused(404, 'unknown payment');
      const committed = state
        .allProviderReturns()
        .filter((r) => r.eventId === req.event_id && r.status !== 'refused')
        .reduce((sum, r) => sum + r.amountCentavos, 0n);
      if (committed + amountCentavos > found.payment.amountCentavos) {
        throw new ReturnRefused(409, 'returns would exceed the payment', 'exceeds_payment');
      }
      const at = now();
      const entry: ProviderReturn = {
        returnId: newId('rtn'),
        refundId: req.refund_id,
        eventId: req.event_id,
        amountCentavos,
        reason: req.reason,
        status: 'returning',
        ...(refusals > 0 && {
          refusalReason: 'return refused by the sandbox (POST /sandbox/returns/refuse)',
        }),
        requestedAt: at,
        updatedAt: at,
      };
      if (refusals > 0) refusals -= 1;
      state.addProviderReturn(entry);
      logger.info({ return_id: entry.returnId, refund_id: entry.refundId }, 'return requested');
      schedule(entry);
      return { created: true, body: returnView(entry) };
    },

    get(returnId: string): ReturnType<typeof returnView> {
      const found = state.providerReturnById(returnId);
      if (!found) throw new ReturnRefused(404, 'unknown return');
      return returnView(found);
    },

    /** Test control: the next `count` returns requested end `refused`. */
    refuseNext(count: number): void {
      refusals = count;
    },

    close(): void {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

function returnView(r: ProviderReturn) {
  return {
    return_id: r.returnId,
    refund_id: r.refundId,
    event_id: r.eventId,
    amount_brl: formatCentavos(r.amountCentavos),
    status: r.status,
    // Set only once final: a refusal that has not happened yet is not shown.
    refusal_reason: r.status === 'refused' ? (r.refusalReason ?? null) : null,
    requested_at: r.requestedAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

/**
 * GET /sandbox/returns: money back in a payer's account, one entry per return that reached it,
 * whichever face returned it (a provider API return: `rtr_id` is its return_id, `end_to_end_id` the
 * payment's event_id, `devolucao_id` the refund_id).
 */
export function payerReturnsView(state: SandboxState) {
  return state.allReturns().map((r) => ({
    rtr_id: r.rtrId,
    end_to_end_id: r.endToEndId,
    devolucao_id: r.devolucaoId,
    valor: formatCentavos(r.amountCentavos),
    returned_at: r.returnedAt.toISOString(),
  }));
}
