import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import {
  createPartner,
  listPartners,
  setPartnerCallback,
  setPartnerStatus,
} from '../adapters/db/partners-repo';
import {
  CallbackOverlapActive,
  NoCallbackConfigured,
  rotateApiKey,
  rotateCallbackSecret,
} from '../adapters/db/credential-rotation';
import { OverlapError, parseOverlap } from '../domain/rotation';
import { CallbackUrlRefused, vetCallbackUrl, type CallbackUrlPolicy } from '../adapters/callbacks/url-guard';
import { callbackEventAnswer, listCallbackEvents } from '../adapters/db/callbacks-repo';
import { listPartnerPayouts } from '../adapters/db/payouts-repo';
import { callbackSecretProblem, generateCallbackSecret } from '../adapters/callbacks/signature';
import type { SecretBox } from '../adapters/secrets/secret-box';
import {
  findRefundCase,
  listRefundCases,
  resolveRefundCase,
  type RefundCase,
  type RefundCaseChange,
} from '../adapters/db/refund-cases-repo';
import {
  approveRefundUpdate,
  REFUND_NOT_AWAITING_APPROVAL,
  refundWorkflowId,
} from '../workflows/refund.contract';
import type { Db } from '../adapters/db/pool';
import { PAYOUT_STATUSES, toPayoutResponse, type SettlementNetwork } from '../domain/payout';
import {
  ApplicationFailure,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowService,
} from '@temporalio/client';
import { isUuid } from '../domain/ids';
import { listOpenAttention } from '../adapters/db/attention-repo';
import { allowWallet, denyWallet, listDeniedWallets } from '../adapters/db/screening-denylist-repo';
import { receiverWalletError } from '../domain/wallet';
import { findPayoutLocation } from '../adapters/db/payouts-repo';
import { usdtUnitsFromDecimal } from '../domain/money';
import {
  PAYOUT_NOT_RESOLVABLE,
  resolvePayoutUpdate,
  type OperatorDecisionInput,
} from '../workflows/payout.contract';
import type { PixWebhookAdmin } from '../adapters/provider/api-pix/api-pix-provider';
import { BUILD_ID_PATTERN, describeDeployment, setCurrentVersion } from '../temporal/worker-versioning';

/**
 * Admin CLI for the operator's account managers and deployers. Prints one JSON object on stdout per
 * command; errors go to stderr with exit code 1 (usage errors: 2). Talks to DATABASE_URL (default: the
 * local stack of `npm start`); the `deploy` commands talk to Temporal only (TEMPORAL_* variables).
 * The process (src/main/admin.ts) hands it the database, Temporal and the callback rules, each
 * configured only when a command asks for it.
 *
 * A command is one entry of COMMANDS: its synopsis and help, its own options (anything else is a
 * usage error) and its plan. The overview help is built from the table.
 */

type OptionSpec = { type: 'string' } | { type: 'boolean' };
type Values = Record<string, string | boolean | undefined>;

interface CommandInfo {
  /** Arguments after the command words, as shown in help ("--id <partner_id>"). */
  args: string;
  summary: string;
  /** More text for the command's own --help. */
  details?: string;
  options: Record<string, OptionSpec>;
}

interface DbCommand extends CommandInfo {
  uses?: 'database';
  /**
   * Checks the options (a UsageError before any database work) and returns the work itself, whose
   * result is printed as JSON.
   */
  plan(values: Values): (db: Db, context: CommandContext) => Promise<unknown>;
}

/** The Temporal side of a command: the namespace and the worker deployment of the configuration. */
export interface TemporalTarget {
  service: WorkflowService;
  namespace: string;
  deploymentName: string;
}

/** A command on Temporal alone: it neither migrates nor opens the database. */
interface TemporalCommand extends CommandInfo {
  uses: 'temporal';
  plan(values: Values): (temporal: TemporalTarget) => Promise<unknown>;
}

/** A command on a payout's workflow: the database finds it, Temporal carries the decision to it. */
interface PayoutWorkflowCommand extends CommandInfo {
  uses: 'database+temporal';
  plan(values: Values): (db: Db, temporal: Client, context: CommandContext) => Promise<unknown>;
}

/** The PIX institution's webhook registration (PIX_PROVIDER=bcb-api-pix). */
export interface ApiPixTarget {
  webhooks: PixWebhookAdmin;
  /** PUBLIC_BASE_URL's webhook route for PROVIDER_NAME, when PUBLIC_BASE_URL is set. */
  defaultWebhookUrl?: string;
}

/** A command on the API Pix institution alone. */
interface ApiPixCommand extends CommandInfo {
  uses: 'api-pix';
  plan(values: Values): (pix: ApiPixTarget) => Promise<unknown>;
}

type Command = DbCommand | TemporalCommand | PayoutWorkflowCommand | ApiPixCommand;

/** What the commands work on, opened (and closed again) per command by the process. */
export interface AdminResources {
  /** The database, migrated first. */
  withDatabase(work: (db: Db) => Promise<unknown>): Promise<unknown>;
  /** Temporal alone: the workflow service, the namespace and the worker deployment. */
  withTemporal(work: (temporal: TemporalTarget) => Promise<unknown>): Promise<unknown>;
  /** A Temporal client with the service's payload codec: decisions and answers are payloads like any other. */
  withClient(work: (client: Client) => Promise<unknown>): Promise<unknown>;
  /** The callback URL rules the worker sends by, and the box that seals callback secrets. */
  callbacks(): { policy: CallbackUrlPolicy; secrets: SecretBox };
  /** What a COMPLETED payout names of its chain, as the api shows it. */
  network(): SettlementNetwork;
  /** The API Pix institution (PIX_PROVIDER=bcb-api-pix and its PIX_API_* settings). */
  withApiPix(work: (pix: ApiPixTarget) => Promise<unknown>): Promise<unknown>;
}

/** What a command may also ask for, configured only when it does. */
type CommandContext = Pick<AdminResources, 'callbacks' | 'network'>;

const INVOCATION = 'npm run --silent admin --';
const str: OptionSpec = { type: 'string' };

/** A mistake in the command line: exit code 2. */
export class UsageError extends Error {}

function requireOption(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value.trim();
}

function requirePartnerId(values: Values): string {
  const id = requireOption(values, 'id');
  if (!isUuid(id)) throw new UsageError('--id must be a partner id (a UUID)');
  return id.toLowerCase();
}

/** A partner id that matched no row is an operator mistake, not a bug: exit 1 with a plain message. */
function found<T>(result: T | null | false, id: string): T {
  if (result === null || result === false) throw new Error(`no partner ${id}`);
  return result;
}

/** --overlap in seconds (0 when absent): how long a replaced credential stays valid. */
function overlapOption(values: Record<string, unknown>): number {
  if (values.overlap === undefined) return 0;
  try {
    return parseOverlap(String(values.overlap));
  } catch (err) {
    if (err instanceof OverlapError) throw new UsageError(`--overlap: ${err.message}`);
    throw err;
  }
}

/** The first line of stdin, checked as a Standard Webhooks secret (whsec_ + base64). */
async function readSecretFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('callback secret (whsec_...): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk as Buffer);
    if (Buffer.concat(chunks).includes(0x0a)) break;
  }
  const secret = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0]!.trim();
  if (!secret) throw new UsageError('--secret-stdin: no secret on stdin');
  const problem = callbackSecretProblem(secret);
  if (problem) throw new UsageError(`--secret-stdin: the secret ${problem}`);
  return secret;
}

function noDeployment(t: TemporalTarget): Error {
  return new Error(
    `no worker of deployment ${t.deploymentName} has polled namespace ${t.namespace} yet ` +
      '(is TEMPORAL_WORKER_BUILD_ID set on the workers?)',
  );
}

const COMMANDS: Record<string, Command> = {
  'partner create': {
    args: '--name <name>',
    summary: 'create a partner and issue its API key (shown once)',
    details: 'Prints {"partner_id", "api_key"}. Only a hash of the key is stored: it cannot be shown again.',
    options: { name: str },
    plan(values) {
      const name = requireOption(values, 'name');
      if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
      return async (db) => {
        const { partner, apiKey } = await createPartner(db, name);
        return { partner_id: partner.id, api_key: apiKey };
      };
    },
  },
  'partner list': {
    args: '',
    summary: 'list partners',
    details: 'Prints {"partners": [{"partner_id", "name", "status", "callback_url", "created_at"}]}.',
    options: {},
    plan: () => async (db) => ({
      partners: (await listPartners(db)).map((p) => ({
        partner_id: p.id,
        name: p.name,
        status: p.status,
        callback_url: p.callbackUrl,
        created_at: p.createdAt,
      })),
    }),
  },
  'partner rotate-key': {
    args: '--id <partner_id> [--overlap <duration>]',
    summary: 'issue a new API key (shown once); the old ones end now, or after --overlap',
    details:
      'Prints {"partner_id", "api_key", "previous_keys_valid_until"}. With --overlap (e.g. 24h, 7d,\n' +
      'at most 30d) the old keys keep working beside the new one until that instant, then are\n' +
      'refused with nothing more to run; without it they are refused from now on.',
    options: { id: str, overlap: str },
    plan(values) {
      const id = requirePartnerId(values);
      const overlap = overlapOption(values);
      return async (db) => {
        const rotation = found(await rotateApiKey(db, id, overlap), id);
        return {
          partner_id: id,
          api_key: rotation.issued,
          previous_keys_valid_until: rotation.previousValidUntil,
        };
      };
    },
  },
  'partner rotate-callback-secret': {
    args: '--id <partner_id> [--overlap <duration>] [--secret-stdin]',
    summary: 'replace the callback signing secret; both sign callbacks during --overlap',
    details:
      'Prints {"partner_id", "callback_secret", "previous_secret_valid_until"} ("callback_secret"\n' +
      'only when generated; --secret-stdin reads a whsec_ secret from stdin instead). During the\n' +
      'overlap (e.g. 24h, at most 30d) every callback carries a signature by each secret, so the\n' +
      'partner switches its receiver to the new one at any moment in it; then only the new one signs.\n' +
      'While an overlap runs, another rotation with --overlap is refused; without it, every replaced\n' +
      'secret ends at once (a leaked secret).',
    options: { id: str, overlap: str, 'secret-stdin': { type: 'boolean' } },
    plan(values) {
      const id = requirePartnerId(values);
      const overlap = overlapOption(values);
      const fromStdin = values['secret-stdin'] === true;
      return async (db, { callbacks }) => {
        const secret = fromStdin ? await readSecretFromStdin() : generateCallbackSecret();
        const rotation = await rotateCallbackSecret(db, id, secret, overlap, callbacks().secrets).catch(
          (err: unknown) => {
            if (err instanceof NoCallbackConfigured)
              throw new UsageError('the partner has no callback: use partner set-callback');
            if (err instanceof CallbackOverlapActive)
              throw new UsageError(
                `the previous rotation's overlap lasts until ${err.until}: rotate again after it, or with --overlap 0 to end every replaced secret now`,
              );
            throw err;
          },
        );
        return {
          partner_id: id,
          ...(fromStdin ? {} : { callback_secret: secret }),
          previous_secret_valid_until: found(rotation, id).previousValidUntil,
        };
      };
    },
  },
  'partner disable': {
    args: '--id <partner_id>',
    summary: "refuse the partner's keys from now on (401)",
    options: { id: str },
    plan(values) {
      const id = requirePartnerId(values);
      return async (db) => {
        found(await setPartnerStatus(db, id, 'disabled'), id);
        return { partner_id: id, status: 'disabled' };
      };
    },
  },
  'partner enable': {
    args: '--id <partner_id>',
    summary: "accept the partner's keys again",
    options: { id: str },
    plan(values) {
      const id = requirePartnerId(values);
      return async (db) => {
        found(await setPartnerStatus(db, id, 'active'), id);
        return { partner_id: id, status: 'active' };
      };
    },
  },
  'partner set-callback': {
    args: '--id <partner_id> --url <url> [--secret-stdin]',
    summary: 'set the callback URL and its signing secret (generated, or read from stdin)',
    details:
      'Prints {"partner_id", "callback_url"}, and "callback_secret" when it was generated: give it to\n' +
      'the partner, who verifies callbacks with it (Standard Webhooks, whsec_...). It is shown once\n' +
      'and stored encrypted. --secret-stdin reads a whsec_ secret from the first line of stdin\n' +
      'instead (secrets never go on a command line, where ps and shell history keep them).\n' +
      'The URL must be https in production (elsewhere http only for loopback); hosts that resolve to\n' +
      'loopback, private or link-local addresses are refused unless CALLBACK_ALLOW_PRIVATE_NETWORKS=true.',
    options: { id: str, url: str, 'secret-stdin': { type: 'boolean' } },
    plan(values) {
      const id = requirePartnerId(values);
      const url = requireOption(values, 'url');
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
        throw new UsageError('--url must be an http(s) URL');
      }
      const fromStdin = values['secret-stdin'] === true;
      return async (db, { callbacks }) => {
        const { policy, secrets } = callbacks();
        // The send-time guard, applied here too: a URL the worker would refuse is refused up front.
        // A name that does not resolve yet is accepted (the partner may still be setting up DNS):
        // every send resolves and checks it again.
        await vetCallbackUrl(url, policy).catch((err: unknown) => {
          if (err instanceof CallbackUrlRefused && err.unresolvable) return;
          // The operator sees what the guard found; partners get the message alone.
          throw err instanceof CallbackUrlRefused
            ? new UsageError(`--url refused: ${err.message} (${err.detail})`)
            : err;
        });
        const secret = fromStdin ? await readSecretFromStdin() : generateCallbackSecret();
        if (!secrets.encrypts) {
          process.stderr.write(
            'warning: PAYLOAD_ENCRYPTION_KEY is not set: the secret is stored unencrypted\n',
          );
        }
        found(await setPartnerCallback(db, id, { url, secret }, secrets), id);
        return { partner_id: id, callback_url: url, ...(fromStdin ? {} : { callback_secret: secret }) };
      };
    },
  },
  'partner clear-callback': {
    args: '--id <partner_id>',
    summary: 'stop sending callbacks to the partner',
    options: { id: str },
    plan(values) {
      const id = requirePartnerId(values);
      return async (db, { callbacks }) => {
        found(await setPartnerCallback(db, id, null, callbacks().secrets), id);
        return { partner_id: id, callback_url: null };
      };
    },
  },
  'partner deliveries': {
    args: '--id <partner_id> [--limit <n>]',
    summary: "list the partner's recent callbacks and every delivery attempt",
    details:
      'Prints {"partner_id", "events": [...]}, newest first (default 20 events, at most 500).\n' +
      'state: pending (being retried), delivered (2xx received), gave_up (no 2xx within 24 h),\n' +
      'skipped (no callback URL configured when it was due).',
    options: { id: str, limit: str },
    plan(values) {
      const id = requirePartnerId(values);
      const limitText = typeof values.limit === 'string' ? values.limit.trim() : '20';
      const limit = Number(limitText);
      if (!/^\d+$/.test(limitText) || limit < 1 || limit > 500) {
        throw new UsageError('--limit must be a whole number from 1 to 500');
      }
      return async (db) => ({
        partner_id: id,
        events: (await listCallbackEvents(db, id, limit)).map(callbackEventAnswer),
      });
    },
  },
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
  'screening list': {
    args: '',
    summary: "list the operators' denylist of receiver wallets",
    details:
      'Prints {"denylist": [{"wallet", "reason", "added_by", "added_at"}]}. A wallet here is refused at POST\n' +
      '(422 "receiver_wallet failed compliance screening") and not paid by a payout that reaches settlement.',
    options: {},
    plan: () => async (db) => ({
      denylist: (await listDeniedWallets(db)).map((e) => ({
        wallet: e.wallet,
        reason: e.reason,
        added_by: e.addedBy,
        added_at: e.addedAt,
      })),
    }),
  },
  'screening deny': {
    args: '--wallet <0x..> --by <who> --reason <why>',
    summary: "add a receiver wallet to the operators' denylist",
    details:
      'From the next screening on (POST may reuse a verdict for SCREENING_CACHE_SECONDS), POSTs for it answer\n' +
      '422, and payouts paying it that have not yet requested or signed their USDT wait for a decision\n' +
      '(payouts resolve). Who, when and why are kept with every change.',
    options: { wallet: str, by: str, reason: str },
    plan(values) {
      const change = denylistChange(values);
      return async (db) => {
        await denyWallet(db, change);
        return { wallet: change.wallet.toLowerCase(), denied: true };
      };
    },
  },
  'screening allow': {
    args: '--wallet <0x..> --by <who> --reason <why>',
    summary: "remove a receiver wallet from the operators' denylist",
    details:
      'Who and why are kept. Payouts already waiting on it are still decided one by one (payouts resolve).',
    options: { wallet: str, by: str, reason: str },
    plan(values) {
      const change = denylistChange(values);
      return async (db) => {
        const removed = await allowWallet(db, change);
        if (!removed) throw new Error(`wallet ${change.wallet} is not on the denylist`);
        return { wallet: change.wallet.toLowerCase(), denied: false };
      };
    },
  },
  'refunds list': {
    args: '[--all]',
    summary: 'list unfinished refund cases (PIX received and not settled), oldest first',
    details:
      'Prints {"refund_cases": [{"id", "payout_id", "charge_id", "event_id", "amount_brl", "reason", "kind",\n' +
      '"status", "return_id", "refusal_reason", "approved_by", "created_at", "status_changed_at", "resolved_at",\n' +
      '"resolution_note", "changes": [{"status", "at", "detail"}]}]}. status: open, awaiting_approval, returning,\n' +
      'returned, refused or resolved (by hand). Without --all: every case not returned nor resolved.\n' +
      'docs/operations.md#refund-cases says what to do in each status.',
    options: { all: { type: 'boolean' } },
    plan: (values) => async (db) => ({
      refund_cases: (await listRefundCases(db, { all: values.all === true })).map(refundCaseView),
    }),
  },
  'refunds approve': {
    uses: 'database+temporal',
    args: '--id <refund_case_id> [--by <who>]',
    summary: 'return the payment of a refund case that awaits approval',
    details:
      'Only a case in status awaiting_approval (its kind is not in REFUND_AUTO_RETURN_KINDS). Its refund\n' +
      'workflow records who approved and asks the provider to return the payment; prints the case once it\n' +
      'is returning. Approving again is harmless.',
    options: { id: str, by: str },
    plan(values) {
      const id = requireOption(values, 'id');
      if (!isUuid(id)) throw new UsageError('--id must be a refund case id (a UUID)');
      const by = typeof values.by === 'string' ? values.by : 'admin';
      if (by.length > 200) throw new UsageError('--by must be at most 200 characters');
      return async (db, temporal) => {
        const caseId = id.toLowerCase();
        const found = await findRefundCase(db, caseId);
        if (found === null) throw new Error(`no refund case ${id}`);
        if (found.status === 'open') {
          throw new Error(
            `refund case ${id} is open: its workflow has not applied the policy, or the PIX provider cannot return payments (resolve it by hand)`,
          );
        }
        // Approved before (the workflow may have ended since): the same approval, nothing more to do.
        if (found.approvedBy !== null) return refundCaseView(found);
        if (found.status !== 'awaiting_approval') {
          throw new Error(`refund case ${id} is ${found.status}: it does not await approval`);
        }
        try {
          await temporal.workflow
            .getHandle(refundWorkflowId(caseId))
            .executeUpdate(approveRefundUpdate, { args: [{ by }], updateId: `approve-${caseId}` });
        } catch (err) {
          const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
          if (cause instanceof ApplicationFailure && cause.type === REFUND_NOT_AWAITING_APPROVAL) {
            throw new Error(`refund case ${id} not approved: ${cause.message}`);
          }
          if (err instanceof WorkflowNotFoundError)
            throw new Error(`refund case ${id} has no running workflow`);
          throw err;
        }
        const after = await findRefundCase(db, caseId);
        return refundCaseView(after ?? found);
      };
    },
  },
  'refunds resolve': {
    args: '--id <refund_case_id> --note <text>',
    summary: 'mark a refund case resolved by hand, with a note of what was done',
    details:
      'Prints the case. Only a case with no return on its way: open, awaiting_approval or refused (a\n' +
      'returning case is followed by its workflow until the provider answers). A case already resolved keeps\n' +
      'its first resolution and note.',
    options: { id: str, note: str },
    plan(values) {
      const id = requireOption(values, 'id');
      if (!isUuid(id)) throw new UsageError('--id must be a refund case id (a UUID)');
      const note = requireOption(values, 'note');
      if (note.length > 2000) throw new UsageError('--note must be at most 2000 characters');
      return async (db) => {
        const resolved = await resolveRefundCase(db, id.toLowerCase(), note);
        if (resolved === null) throw new Error(`no refund case ${id}`);
        if (resolved.status !== 'resolved') {
          throw new Error(
            `refund case ${id} is ${resolved.status}: not resolved (no hand resolution once returning or returned)`,
          );
        }
        return refundCaseView(resolved);
      };
    },
  },
  'pix webhook set': {
    uses: 'api-pix',
    args: '[--url <https_url>]',
    summary: "register the service's webhook URL for the receiver key at the API Pix institution",
    details:
      'Default URL: PUBLIC_BASE_URL + /webhooks/ + PROVIDER_NAME. The institution appends /pix and POSTs\n' +
      'every Pix received on the receiver key there. Prints {"webhook_url", "registered_at"} as the\n' +
      'institution then shows it. Repeating it replaces the URL.',
    options: { url: str },
    plan(values) {
      const given = typeof values.url === 'string' ? values.url : undefined;
      if (given !== undefined && !/^https?:\/\/[^\s]+$/.test(given)) {
        throw new UsageError('--url must be an http(s) URL');
      }
      return async ({ webhooks, defaultWebhookUrl }) => {
        // The institution appends /pix: a trailing slash would make it `//pix`, a route nobody serves.
        const url = (given ?? defaultWebhookUrl)?.replace(/\/+$/, '');
        if (url === undefined) throw new UsageError('--url is required when PUBLIC_BASE_URL is not set');
        const { protocol, hostname } = new URL(url);
        if (protocol !== 'https:' && !['127.0.0.1', 'localhost', '[::1]'].includes(hostname)) {
          throw new UsageError('--url must be https: institutions call webhooks over mutual TLS only');
        }
        await webhooks.registerWebhook(url);
        const shown = await webhooks.getWebhook();
        if (shown === null) throw new Error('the institution shows no webhook after registering it');
        return { webhook_url: shown.url, registered_at: shown.registeredAt ?? null };
      };
    },
  },
  'pix webhook show': {
    uses: 'api-pix',
    args: '',
    summary: 'show the webhook URL the API Pix institution calls for the receiver key',
    details: 'Prints {"webhook_url", "registered_at"}, both null when none is registered.',
    options: {},
    plan() {
      return async ({ webhooks }) => {
        const shown = await webhooks.getWebhook();
        return { webhook_url: shown?.url ?? null, registered_at: shown?.registeredAt ?? null };
      };
    },
  },
  'deploy status': {
    uses: 'temporal',
    args: '',
    summary: "the worker deployment's builds and the open workflows pinned to each",
    details:
      'Prints {"deployment", "current_build_id", "versions": [{"build_id", "status", "pinned_open_workflows"}]}.\n' +
      'New payouts start on current_build_id; every other build keeps the workflows it started until they\n' +
      'end. Stop the workers of a build only once its pinned_open_workflows is 0 (status DRAINED says the\n' +
      'same, minutes later). Deployment: TEMPORAL_WORKER_DEPLOYMENT_NAME; namespace: TEMPORAL_NAMESPACE.',
    options: {},
    plan: () => async (t) => {
      const status = await describeDeployment(t.service, t.namespace, t.deploymentName);
      if (!status) throw noDeployment(t);
      return {
        deployment: status.deploymentName,
        current_build_id: status.currentBuildId ?? null,
        versions: status.versions.map((v) => ({
          build_id: v.buildId,
          status: v.status,
          pinned_open_workflows: v.pinnedOpenWorkflows,
        })),
      };
    },
  },
  'deploy promote': {
    uses: 'temporal',
    args: '--build-id <build_id>',
    summary: 'start new payouts on this build (deploy, or roll back to an older build)',
    details:
      'Prints {"deployment", "current_build_id", "previous_build_id"}. The build\'s workers must be polling\n' +
      'already. Workflows already running stay on the build that started them, so the previous build keeps\n' +
      'running until `deploy status` shows it holds none. A rollback is a promote of the older build.',
    options: { 'build-id': str },
    plan(values) {
      const buildId = requireOption(values, 'build-id');
      if (!BUILD_ID_PATTERN.test(buildId))
        throw new UsageError('--build-id must be a build id (letters, digits, ., _, + or -)');
      return async (t) => {
        const status = await describeDeployment(t.service, t.namespace, t.deploymentName);
        if (!status) throw noDeployment(t);
        // The server would take a version it has never seen and route new payouts to no one.
        if (!status.versions.some((v) => v.buildId === buildId)) {
          throw new Error(
            `build ${buildId} has never polled deployment ${t.deploymentName}; known: ` +
              (status.versions.map((v) => v.buildId).join(', ') || 'none'),
          );
        }
        const { previousBuildId } = await setCurrentVersion(
          t.service,
          t.namespace,
          { deploymentName: t.deploymentName, buildId },
          { identity: 'admin deploy promote' },
        );
        return {
          deployment: t.deploymentName,
          current_build_id: buildId,
          previous_build_id: previousBuildId ?? null,
        };
      };
    },
  },
};

/** A whole number option from 1 to `max`, or `fallback` when absent. */
function denylistChange(values: Values): { wallet: string; by: string; reason: string } {
  const wallet = requireOption(values, 'wallet');
  const problem = receiverWalletError(wallet);
  if (problem) throw new UsageError(`--wallet: ${problem.replace('receiver_wallet ', '')}`);
  const by = requireOption(values, 'by');
  const reason = requireOption(values, 'reason');
  if (reason.length > 2000) throw new UsageError('--reason must be at most 2000 characters');
  return { wallet, by, reason };
}

function countOption(values: Values, name: string, fallback: number, max: number): number {
  const text = typeof values[name] === 'string' ? values[name].trim() : String(fallback);
  const count = Number(text);
  if (!/^\d+$/.test(text) || count < 1 || count > max) {
    throw new UsageError(`--${name} must be a whole number from 1 to ${max}`);
  }
  return count;
}

/** An optional instant option: ISO 8601 with a time zone, passed on as given (full precision). */
function instantOption(values: Values, name: string): string | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  const text = String(value).trim();
  if (
    !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(text) ||
    Number.isNaN(Date.parse(text))
  ) {
    throw new UsageError(
      `--${name} must be an ISO 8601 date-time with a time zone, e.g. 2026-01-31T00:00:00Z`,
    );
  }
  return text;
}

function refundCaseView(c: RefundCase & { changes?: RefundCaseChange[] }) {
  return {
    id: c.id,
    payout_id: c.payoutId,
    charge_id: c.chargeId,
    event_id: c.eventId,
    amount_brl: c.amountBrl,
    reason: c.reason,
    kind: c.kind,
    status: c.status,
    return_id: c.returnId,
    refusal_reason: c.refusalReason,
    approved_by: c.approvedBy,
    created_at: c.createdAt,
    status_changed_at: c.statusChangedAt,
    resolved_at: c.resolvedAt,
    resolution_note: c.resolutionNote,
    ...(c.changes !== undefined && { changes: c.changes }),
  };
}

function synopsis(name: string): string {
  return `${name} ${COMMANDS[name]!.args}`.trim();
}

const SUMMARY_COLUMN = 52;

function overview(): string {
  const lines = Object.keys(COMMANDS).map((name) => {
    const left = `  ${synopsis(name)}`;
    // A synopsis too long for the column gets its summary on the next line.
    const pad =
      left.length < SUMMARY_COLUMN ? left.padEnd(SUMMARY_COLUMN) : `${left}\n${' '.repeat(SUMMARY_COLUMN)}`;
    return pad + COMMANDS[name]!.summary;
  });
  return [
    `usage: ${INVOCATION} <command> [options]`,
    '',
    'commands:',
    ...lines,
    '',
    'Every command takes --help. Environment: DATABASE_URL (default: the stack of `npm start`);',
    'deploy commands: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_WORKER_DEPLOYMENT_NAME.',
  ].join('\n');
}

function commandHelp(name: string): string {
  const command = COMMANDS[name]!;
  return [`usage: ${INVOCATION} ${synopsis(name)}`, '', command.summary, command.details]
    .filter((l) => l !== undefined)
    .join('\n');
}

/** Leading words up to the first option name the command: "partner create --name x". */
function splitCommand(argv: string[]): { name: string; rest: string[] } {
  const firstOption = argv.findIndex((a) => a.startsWith('-'));
  const words = firstOption === -1 ? argv : argv.slice(0, firstOption);
  return { name: words.join(' '), rest: argv.slice(words.length) };
}

/** Runs one command line; the exit code, or a thrown error (a UsageError: exit code 2). */
export async function runAdmin(argv: string[], resources: AdminResources): Promise<number> {
  const { name, rest } = splitCommand(argv);
  const wantsHelp = rest.includes('--help') || rest.includes('-h');
  const command = COMMANDS[name];
  if (!command) {
    // `--help` alone or after a command group ("partner --help") shows the overview.
    const isGroup = name === '' || Object.keys(COMMANDS).some((n) => n.startsWith(`${name} `));
    if (isGroup && wantsHelp) {
      process.stdout.write(`${overview()}\n`);
      return 0;
    }
    if (name === '') {
      process.stderr.write(`${overview()}\n`);
      return 2;
    }
    throw new UsageError(`unknown command "${name}"\n\n${overview()}`);
  }

  let execute: () => Promise<unknown>;
  try {
    const { values } = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
    });
    if (values.help) {
      process.stdout.write(`${commandHelp(name)}\n`);
      return 0;
    }
    const { withDatabase, withTemporal, withClient, withApiPix, callbacks, network } = resources;
    if (command.uses === 'api-pix') {
      const work = command.plan(values);
      execute = () => withApiPix(work);
    } else if (command.uses === 'temporal') {
      const work = command.plan(values);
      execute = () => withTemporal(work);
    } else if (command.uses === 'database+temporal') {
      const work = command.plan(values);
      execute = () => withDatabase((db) => withClient((client) => work(db, client, { callbacks, network })));
    } else {
      const work = command.plan(values);
      execute = () => withDatabase((db) => work(db, { callbacks, network }));
    }
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${commandHelp(name)}`);
  }
  process.stdout.write(`${JSON.stringify(await execute(), null, 2)}\n`);
  return 0;
}

/** The id of a decision's update: one per payout and decision, so a repeated command is not a second one. */
function decisionUpdateId(payoutId: string, input: OperatorDecisionInput): string {
  const digest = createHash('sha256').update(JSON.stringify(input)).digest('hex').slice(0, 16);
  return `resolve-${payoutId.toLowerCase()}-${digest}`;
}
