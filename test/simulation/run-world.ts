/**
 * One world, run: the real decision core (or a planted mutant of it) drives a provider settlement
 * against a seeded ProviderWorld, carrying out each step as the workflow does (src/workflows/payout/
 * provider-settlement.ts: a local try, then a round of retries; webhooks end a wait at once), with an
 * operator who may step in. When the core has ended the payout (or the world's clock runs out), the
 * world runs on to quiescence and the invariants judge what really happened.
 */
import * as core from '../../src/domain/provider-settlement-core';
import type { ProviderSettlementStep } from '../../src/domain/provider-settlement-core';
import * as knowledge from '../../src/domain/provider-settlement-knowledge';
import type {
  ProviderSettlementFact,
  ProviderSettlementKnowledge,
} from '../../src/domain/provider-settlement-knowledge';
import * as request from '../../src/domain/provider-settlement-request';
import type { RequestRound } from '../../src/domain/provider-settlement-request';
import { CHAIN_ID, fmt, ProviderWorld, type WorldOptions } from './provider-world';
import { Random } from './random';

/** The core's functions the runner calls: the real ones, or a mutant to prove the simulator catches it. */
export type Core = Pick<typeof knowledge, 'beginProviderSettlement' | 'evolve'> &
  Pick<typeof request, 'requestRoundFacts'> &
  Pick<typeof core, 'decide' | 'attentionOf' | 'operatorMayNotFail'>;

/** The real one. */
export const REAL_CORE: Core = { ...knowledge, ...request, ...core };

export interface WorldResult {
  seed: number;
  outcome: 'COMPLETED' | 'FAILED' | 'waiting';
  violations: string[];
  /** The provider hid a transfer it made (never named to the service) and said failed: no service could know. */
  hiddenTransfer: boolean;
  trace: string[];
  steps: number;
}

/** A round's attempts: the first at once, then backoff (2 s x 1.5^n, capped) within five minutes. */
const ROUND_ATTEMPTS = 6;
const ROUND_BACKOFF_MS = [2000, 3000, 4500, 6750, 10_125, 15_187];
/** A payout waits this long in simulated time before the world is judged as it stands. */
const HORIZON_MS = 30 * 24 * 3600_000;
const MAX_STEPS = 5000;
/** Seeds the stream that draws whether a world begins after a reset. */
const RESET_STREAM = 0x7e5e7;
/** How long a quiet world keeps running before it is judged as it stands. */
const QUIET_MS = 24 * 3600_000;

export function runWorld(seed: number, options?: WorldOptions, decider: Core = REAL_CORE): WorldResult {
  const world = new ProviderWorld(seed, options);
  const r = world.random;
  const trace: string[] = [];
  let now = 0;
  // Drawn apart from the world's stream, so every other seed replays the world it always did.
  const reset = new Random(seed ^ RESET_STREAM);
  const afterReset = reset.chance(0.12);
  let k: ProviderSettlementKnowledge = decider.beginProviderSettlement(CHAIN_ID, now, !afterReset);
  const learn = (fact: ProviderSettlementFact) => {
    trace.push(`${fmt(fact.at)} fact: ${describe(fact)}`);
    k = decider.evolve(k, fact);
  };
  if (afterReset) {
    // A run an operator's reset undid sent the request (screened clear then); its id is on record
    // when its answer came back and was written.
    const sent = world.request(now);
    const kept = typeof sent === 'object' && reset.chance(0.7);
    trace.push(
      `${fmt(now)} an earlier run (undone by a reset) sent the request${kept ? '' : ', no id on record'}`,
    );
    learn({
      kind: 'requested_by_earlier_run',
      at: now,
      ...(kept && { settlementId: sent.answer.settlementId }),
    });
  }
  // The operator looks in at random times and fails the payout only when the provider, asked by
  // phone, truly has nothing that will move (an honest operator), and the core does not veto it.
  let operatorAt = r.chance(0.3) ? r.int(60_000, 7 * 24 * 3600_000) : Infinity;
  let delivered = 0;
  let outcome: WorldResult['outcome'] = 'waiting';
  let steps = 0;

  const deliverUpTo = (t: number) => {
    while (delivered < world.deliveries.length && world.deliveries[delivered]!.at <= t) {
      const d = world.deliveries[delivered++]!;
      const at = Math.max(now, d.at);
      if (d.event.type === 'completed') {
        world.revealed.add(d.event.txHash);
        learn({ kind: 'reported_completed', at, ...d.event });
      } else {
        learn({ kind: 'reported_failed', at, reason: d.event.reason });
      }
    }
  };

  // A world that has gone quiet is judged a simulated day later: nothing new can happen in it.
  const quiet = () =>
    now > world.quietAfter() + QUIET_MS && (world.reached.length > 0 || world.nothingWillMove(now));
  for (; steps < MAX_STEPS && now < HORIZON_MS && !(outcome === 'waiting' && quiet()); steps++) {
    deliverUpTo(now);
    if (now >= operatorAt) {
      operatorAt = Infinity;
      // A transfer the operator finds paying the receiver (a provider that misreported its amount):
      // `complete` names it, and is taken only once the chain confirms it.
      const found = world.paid().find((t) => world.revealed.has(t.hash));
      if (found && world.verify(now, found.hash, found.amountUnits.toString()) === 'confirmed') {
        trace.push(`${fmt(now)} operator: complete ${found.hash} (confirmed on chain)`);
        trace.push(`${fmt(now)} step: complete ${found.hash} with ${found.amountUnits} units`);
        outcome = 'COMPLETED';
        break;
      }
      const veto = decider.operatorMayNotFail(k);
      if (veto === undefined && world.nothingWillMove(now)) {
        trace.push(`${fmt(now)} operator: fail (the provider confirms nothing was sent)`);
        outcome = 'FAILED';
        break;
      }
      trace.push(`${fmt(now)} operator: looked, did not fail${veto ? ` (refused: ${veto})` : ''}`);
    }
    const step = decider.decide(k, now);
    trace.push(`${fmt(now)} step: ${describeStep(step)}`);
    if (step.kind === 'complete') {
      outcome = 'COMPLETED';
      const tx = world.txs.find((t) => t.hash === step.txHash);
      if (!tx) trace.push(`${fmt(now)} !! completed on a transaction the chain never saw`);
      checkCompleted(world, step, now, trace);
      break;
    }
    if (step.kind === 'fail') {
      outcome = 'FAILED';
      break;
    }
    switch (step.kind) {
      case 'wait': {
        const next = Math.min(
          step.until ?? Infinity,
          world.deliveries[delivered]?.at ?? Infinity,
          operatorAt,
          HORIZON_MS,
        );
        now = Math.max(now + 1, next);
        break;
      }
      case 'screen': {
        const verdict = world.screen(now);
        now += r.int(5, 500);
        if (verdict === 'clear') learn({ kind: 'screened_clear', at: now });
        else if (verdict === 'flagged')
          learn({ kind: 'screened_flagged', at: now, source: 'denylist', detail: 'listed' });
        else learn({ kind: 'screening_unreadable', at: now, detail: 'oracle unreadable' });
        break;
      }
      case 'request': {
        const round = requestRound(
          world,
          () => (now += r.int(5, 3000)),
          (ms) => (now += ms),
        );
        for (const fact of decider.requestRoundFacts(round, now)) learn(fact);
        break;
      }
      case 'read_status': {
        const answer = inRounds(
          () => world.status(now, step.settlementId),
          () => (now += r.int(5, 3000)),
          (ms) => (now += ms),
        );
        learn(
          answer === 'unanswered'
            ? { kind: 'status_unreadable', at: now, detail: 'no answer' }
            : { kind: 'status_read', at: now, status: answer },
        );
        break;
      }
      case 'verify': {
        const verdict = inRounds(
          () => {
            const v = world.verify(now, step.txHash, step.amountUnits);
            // Not mined or not deep enough: the round retries, as NotYetConfirmed does.
            return v === 'unanswered' ? 'unanswered' : v;
          },
          () => (now += r.int(5, 1000)),
          (ms) => (now += ms),
        );
        learn({
          kind: 'chain_checked',
          at: now,
          txHash: step.txHash,
          amountUnits: step.amountUnits,
          verdict: verdict === 'unanswered' ? 'unproven' : verdict,
        });
        break;
      }
    }
  }

  const violations = judge(world, k, outcome, decider, trace);
  // Only a provider that lied can hide a transfer: one the service stopped listening for is its fault.
  const hiddenTransfer =
    outcome === 'FAILED' &&
    world.lied() &&
    world.paid().length > 0 &&
    world.paid().every((t) => !world.revealed.has(t.hash));
  trace.push(...world.log.map((line) => `  ${line}`));
  return {
    seed,
    outcome,
    violations: hiddenTransfer ? [] : violations,
    hiddenTransfer,
    trace,
    steps,
  };
}

/**
 * The request as the workflow sends it: a local try, then (if unanswered) a round; the activity
 * screens the receiver before every attempt (a flag sends nothing, an unreadable source retries).
 */
function requestRound(
  world: ProviderWorld,
  spend: () => number,
  backoff: (ms: number) => void,
): RequestRound {
  let local: { localUnanswered: string } | { localNotSent: string } | undefined;
  const tried = <R extends object>(r: R) => (local === undefined ? r : { ...r, ...local });
  for (let attempt = 0; attempt <= ROUND_ATTEMPTS; attempt++) {
    const at = spend();
    const screened = world.screen(at);
    const answer =
      screened === 'flagged' ? 'flagged' : screened === 'unreadable' ? 'not_sent' : world.request(at);
    if (answer === 'flagged') return tried({ answer: { flagged: { source: 'denylist', detail: 'listed' } } });
    if (answer === 'refused') return tried({ refused: 'refused', attempt: Math.max(1, attempt) });
    if (answer !== 'unanswered' && answer !== 'not_sent') return tried(answer);
    // The round reports its last failure; only a local try's is seen on its own.
    if (attempt === 0)
      local = answer === 'not_sent' ? { localNotSent: 'unreadable' } : { localUnanswered: 'no answer' };
    else if (attempt < ROUND_ATTEMPTS) backoff(ROUND_BACKOFF_MS[attempt - 1]!);
  }
  return tried({ unanswered: 'no answer in the round' });
}

/** A local try, then a round, of a read that only answers or does not. */
function inRounds<T>(
  read: () => T | 'unanswered',
  spend: () => number,
  backoff: (ms: number) => void,
): T | 'unanswered' {
  for (let attempt = 0; attempt <= ROUND_ATTEMPTS; attempt++) {
    spend();
    const answer = read();
    if (answer !== 'unanswered') return answer;
    if (attempt > 0 && attempt < ROUND_ATTEMPTS) backoff(ROUND_BACKOFF_MS[attempt - 1]!);
  }
  return 'unanswered';
}

function checkCompleted(
  world: ProviderWorld,
  step: Extract<ProviderSettlementStep, { kind: 'complete' }>,
  now: number,
  trace: string[],
): void {
  const verdict = world.verify(now, step.txHash, step.amountUnits);
  if (verdict !== 'confirmed' && verdict !== 'unanswered') {
    trace.push(`${fmt(now)} !! completed, but the chain says ${verdict}`);
  }
}

/** The invariants, judged once the world has run on to quiescence. */
function judge(
  world: ProviderWorld,
  k: ProviderSettlementKnowledge,
  outcome: WorldResult['outcome'],
  decider: Core,
  trace: string[],
): string[] {
  const violations: string[] = [];
  const paid = world.paid();
  if (outcome === 'FAILED' && paid.length > 0) {
    violations.push(
      `FAILED, but ${paid.length} transfer(s) paid the receiver (${paid.map((t) => t.hash.slice(0, 10)).join(', ')})`,
    );
  }
  if (paid.length > 1) violations.push(`${paid.length} transfers paid the receiver for one payout`);
  const afterFlag = world.reached.filter((at) => at >= world.flagAt);
  if (afterFlag.length > 0) {
    violations.push(
      `a settlement request reached the provider at ${fmt(afterFlag[0]!)}, after the receiver was flagged at ${fmt(world.flagAt)}`,
    );
  }
  if (outcome === 'COMPLETED') {
    const last = trace.filter((l) => l.includes('step: complete')).at(-1) ?? '';
    const hash = /complete (0x[0-9a-f]+)/.exec(last)?.[1];
    const tx = paid.find((t) => t.hash === hash);
    if (!tx) violations.push(`COMPLETED on ${hash?.slice(0, 10)}, which did not pay the receiver`);
  }
  if (outcome === 'waiting') {
    const open = Object.keys(decider.attentionOf(k));
    if (open.length === 0 && !world.providerUndecided()) {
      violations.push('still waiting, with no attention item naming why (and the provider has decided)');
    }
  }
  if (trace.some((l) => l.includes('!!'))) violations.push('the trace has a contradiction (marked !!)');
  return violations;
}

function describe(f: ProviderSettlementFact): string {
  const { kind, at: _at, ...rest } = f;
  const fields = Object.entries(rest)
    .map(
      ([key, v]) =>
        `${key}=${typeof v === 'string' && v.startsWith('0x') ? v.slice(0, 10) : JSON.stringify(v)}`,
    )
    .join(' ');
  return `${kind} ${fields}`.trim();
}

function describeStep(s: ProviderSettlementStep): string {
  switch (s.kind) {
    case 'wait':
      return `wait until ${s.until === undefined ? 'a fact arrives' : fmt(s.until)}`;
    case 'verify':
      return `verify ${s.txHash.slice(0, 10)} for ${s.amountUnits} units`;
    case 'complete':
      return `complete ${s.txHash} with ${s.amountUnits} units`;
    case 'fail':
      return `fail ${s.reason}`;
    case 'read_status':
      return `read status of ${s.settlementId}`;
    default:
      return s.kind;
  }
}
