import { createHash } from 'node:crypto';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { listOpenAttention } from '../adapters/db/attention-repo';
import { findPayoutLocation, listPartnerPayouts } from '../adapters/db/payouts-repo';
import { isUuid } from '../domain/ids';
import { usdtUnitsFromDecimal } from '../domain/money';
import { PAYOUT_STATUSES, toPayoutResponse } from '../domain/payout';
import {
  PAYOUT_NOT_RESOLVABLE,
  resolvePayoutUpdate,
  type OperatorDecisionInput,
} from '../workflows/payout.contract';
import { countOption, instantOption, requireOption, str, UsageError, type Commands } from './command';

/** `payouts …`: a partner's payouts, those waiting on an unknown, and an operator's decision on one. */

export const PAYOUT_COMMANDS: Commands = {
  'payouts list': {
    args: '--partner <partner_id> [--status <s>] [--since <iso>] [--until <iso>] [--limit <n>] [--starting-after <payout_id>]',
    summary: "list a partner's payouts, newest first, from the read model",
    details:
      'Prints {"partner_id", "payouts": [...], "has_more", "next_starting_after"}: each payout as the partner\n' +
      'sees it, plus its failure_reason when FAILED. --since is inclusive, --until exclusive; --limit\n' +
      'defaults to 20 (at most 500). Pass next_starting_after as --starting-after for the next page.',
    options: { partner: str, status: str, since: str, until: str, limit: str, 'starting-after': str },
    plan(values) {
      const partnerId = requireOption(values, 'partner');
      if (!isUuid(partnerId)) throw new UsageError('--partner must be a partner id (a UUID)');
      const statusText = values.status === undefined ? undefined : String(values.status).trim().toUpperCase();
      const status = PAYOUT_STATUSES.find((s) => s === statusText);
      if (statusText !== undefined && !status) {
        throw new UsageError(`--status must be one of ${PAYOUT_STATUSES.join(', ')}`);
      }
      const startingAfter = values['starting-after'];
      if (startingAfter !== undefined && !isUuid(String(startingAfter).trim())) {
        throw new UsageError('--starting-after must be a payout id (a UUID)');
      }
      const query = {
        partnerId: partnerId.toLowerCase(),
        status,
        createdAtGte: instantOption(values, 'since'),
        createdAtLt: instantOption(values, 'until'),
        startingAfter: startingAfter === undefined ? undefined : String(startingAfter).trim().toLowerCase(),
        limit: countOption(values, 'limit', 20, 500),
      };
      return async (db, { network }) => {
        const page = await listPartnerPayouts(db, query);
        if (!page) throw new Error(`no payout ${query.startingAfter} of partner ${query.partnerId}`);
        const shown = network();
        return {
          partner_id: query.partnerId,
          payouts: page.payouts.map((p) => ({
            ...toPayoutResponse(p, shown),
            ...(p.failureReason ? { failure_reason: p.failureReason } : {}),
          })),
          has_more: page.hasMore,
          next_starting_after: page.hasMore ? page.payouts.at(-1)!.id : null,
        };
      };
    },
  },
  'payouts attention': {
    args: '[--payout <payout_id>]',
    summary: 'list payouts waiting on an unknown (or flagged for review), oldest first',
    details:
      'Prints {"attention": [{"id", "payout_id", "kind", "detail", "raised_at"}]}: what each payout waits on\n' +
      'without proof (docs/operations.md#payouts-waiting-on-an-unknown). The payout keeps looking by itself;\n' +
      'where only a person can find the answer, `payouts resolve` records the decision.',
    options: { payout: str },
    plan(values) {
      const payout = values.payout === undefined ? undefined : requireOption(values, 'payout');
      if (payout !== undefined && !isUuid(payout))
        throw new UsageError('--payout must be a payout id (a UUID)');
      return async (db) => ({
        attention: (await listOpenAttention(db, { payoutId: payout?.toLowerCase() })).map((a) => ({
          id: a.id,
          payout_id: a.payoutId,
          kind: a.kind,
          detail: a.detail,
          raised_at: a.raisedAt,
        })),
      });
    },
  },
  'payouts resolve': {
    uses: 'database+temporal',
    args: '--id <payout_id> --decision fail|complete|refund|release --by <who> --reason <why> [--tx-hash <0x..> --amount-usdt <decimal>]',
    summary:
      'decide a waiting payout: fail or complete one that waits on an unknown; refund or release a flagged receiver',
    details:
      'Only a payout with an open attention item can be decided. On an unknown: `fail` ends it FAILED\n' +
      '(operator_decision) and opens the refund case for its payment; `complete` names the on-chain transfer\n' +
      'that paid the receiver, which is verified and claimed for the payout before it completes. On a receiver\n' +
      'flagged by screening before sending (attention kind receiver_flagged): `refund` ends it FAILED\n' +
      '(receiver_flagged) and opens the refund case; `release` sends the USDT after all. Who and why are kept\n' +
      '(operator_decisions table, worker log). Prints the payout as it ended (or PROCESSING once released).',
    options: { id: str, decision: str, by: str, reason: str, 'tx-hash': str, 'amount-usdt': str },
    plan(values) {
      const id = requireOption(values, 'id');
      if (!isUuid(id)) throw new UsageError('--id must be a payout id (a UUID)');
      const decision = requireOption(values, 'decision');
      if (decision !== 'fail' && decision !== 'complete' && decision !== 'refund' && decision !== 'release')
        throw new UsageError('--decision is fail, complete, refund or release');
      const decidedBy = requireOption(values, 'by');
      const reason = requireOption(values, 'reason');
      if (reason.length > 2000) throw new UsageError('--reason must be at most 2000 characters');
      const input: OperatorDecisionInput = { decision, decidedBy, reason };
      if (decision === 'complete') {
        const txHash = requireOption(values, 'tx-hash');
        if (!/^0x[0-9a-fA-F]{64}$/.test(txHash)) throw new UsageError('--tx-hash must be a transaction hash');
        let units: bigint;
        try {
          units = usdtUnitsFromDecimal(requireOption(values, 'amount-usdt'));
        } catch {
          throw new UsageError('--amount-usdt must be a USDT amount with at most 6 decimals');
        }
        if (units <= 0n) throw new UsageError('--amount-usdt must be positive');
        Object.assign(input, { txHash: txHash as `0x${string}`, amountUsdtUnits: units.toString() });
      }
      return async (db, temporal, { network }) => {
        const location = await findPayoutLocation(db, id.toLowerCase());
        if (location === null) throw new Error(`no payout ${id}`);
        try {
          const ended = await temporal.workflow
            .getHandle(location.workflowId)
            // The same command sent again (a retry after a timeout) is the same update, decided once.
            .executeUpdate(resolvePayoutUpdate, { args: [input], updateId: decisionUpdateId(id, input) });
          return {
            ...toPayoutResponse(ended, network()),
            ...(ended.failureReason ? { failure_reason: ended.failureReason } : {}),
          };
        } catch (err) {
          const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
          if (cause instanceof ApplicationFailure && cause.type === PAYOUT_NOT_RESOLVABLE) {
            throw new Error(`payout ${id} not decided: ${cause.message}`);
          }
          if (err instanceof WorkflowNotFoundError)
            throw new Error(`payout ${id} has ended: nothing to decide`);
          throw err;
        }
      };
    },
  },
};

/** The id of a decision's update: one per payout and decision, so a repeated command is not a second one. */
function decisionUpdateId(payoutId: string, input: OperatorDecisionInput): string {
  const digest = createHash('sha256').update(JSON.stringify(input)).digest('hex').slice(0, 16);
  return `resolve-${payoutId.toLowerCase()}-${digest}`;
}
