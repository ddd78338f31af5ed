import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { WorkflowNotFoundError } from '@temporalio/client';
import { freePort } from '../../dev/local/infra/ports';
import { CLAIM_LEASE_SECONDS, CLAIM_RENEW_MS } from '../../src/api/payouts/claim-lease';
import { post, type ApiResponse } from '../support/http';
import type { ServiceProcess } from '../support/service-process';
import { useStack, VALID_PAYOUT } from '../support/stack';
import { until } from '../support/until';

// An api process SIGKILLed in the middle of a POST with an Idempotency-Key (docs/decisions.md D73,
// docs/reliability.md): the partner's retry with the same key gets the payout the dead request
// started, within CLAIM_LEASE_SECONDS of the crash, instead of 409 for a minute. Real api processes
// (`src/main/api.ts`), a real Temporal dev server and PostgreSQL; the POST is held in its
// update-with-start wait by having no worker until the api is dead.

const LEASE_MS = CLAIM_LEASE_SECONDS * 1000;
/** Retries of a partner's client: this often, and no more of them than fit in the lease. */
const RETRY_EVERY_MS = 200;
const MAX_ATTEMPTS = LEASE_MS / RETRY_EVERY_MS;

describe('api SIGKILLed mid-POST: the retry with the same Idempotency-Key gets the payout', () => {
  // No in-process worker: a POST waits for its charge until the test starts one.
  const stack = useStack({ worker: false, proxyProvider: true });
  const started: ServiceProcess[] = [];

  afterEach(async () => {
    await stack.stopWorker();
  });

  async function startApi(port: number): Promise<{ url: string; proc: ServiceProcess }> {
    const proc = await stack.startProcess('api', { PORT: String(port) });
    started.push(proc);
    return { url: `http://127.0.0.1:${port}`, proc };
  }

  const postKey = (url: string, apiKey: string, key: string): Promise<ApiResponse> =>
    post(url, apiKey, VALID_PAYOUT, { 'idempotency-key': key });

  async function claimRow(partnerId: string, key: string) {
    const { rows } = await stack.db.query<{
      payout_id: string;
      workflow_id: string;
      state: string;
      lapsed: boolean;
      age_ms: number;
    }>(
      `SELECT payout_id, workflow_id, state, lease_until <= now() AS lapsed,
              extract(epoch FROM now() - claimed_at) * 1000 AS age_ms
         FROM idempotency_keys WHERE partner_id = $1 AND key = $2`,
      [partnerId, key],
    );
    return rows[0];
  }

  /**
   * Sends the POST and waits until it is held where the crash must hit it: its claim made, and its
   * claim alive past its first lease only because the request renews it. `at` is where it waits:
   * `workflow`, its payout's workflow started (update-with-start, waiting for a worker); `charge`,
   * the api's own charge request held at the provider until `release`. A duplicate meanwhile is a
   * conflict.
   */
  async function heldPost(
    url: string,
    apiKey: string,
    partnerId: string,
    key: string,
    at: 'workflow' | 'charge',
  ) {
    const held = at === 'charge' ? stack.providerProxy!.hold('POST /pix/charges') : undefined;
    if (at === 'workflow') {
      const armed = await fetch(`${stack.sandboxUrl}/sandbox/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ route: 'POST /pix/charges', status: 503, count: 1 }),
      });
      expect(armed.status).toBe(201);
    }
    const pending = postKey(url, apiKey, key).then(
      (res) => ({ res }),
      (err: unknown) => ({ err }),
    );
    if (held) await held.arrived;
    const claim = await until(`the POST to reach its ${at}`, async () => {
      const row = await claimRow(partnerId, key);
      if (!row || held) return row;
      try {
        await stack.temporal.workflow.getHandle(row.workflow_id).describe();
        return row;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return undefined;
        throw err;
      }
    });
    await until('the claim to outlive its first lease by renewal', async () => {
      const row = await claimRow(partnerId, key);
      return row && row.age_ms > LEASE_MS + CLAIM_RENEW_MS ? row : undefined;
    });
    expect(await claimRow(partnerId, key)).toMatchObject({ state: 'claimed', lapsed: false });
    // A live request still in flight: its duplicate is a conflict (docs/api.md "Idempotency").
    const duplicate = await postKey(url, apiKey, key);
    expect(duplicate.status).toBe(409);
    expect(duplicate.json).toEqual({ error: 'idempotency conflict' });
    return { claim, pending, release: () => held?.release() };
  }

  /** The partner's client: retries 409 every RETRY_EVERY_MS, at most `max` times in all. */
  async function retry(url: string, apiKey: string, key: string, max: number) {
    const attempts: { sentAt: number; status: number }[] = [];
    for (;;) {
      const sentAt = performance.now();
      const res = await postKey(url, apiKey, key);
      attempts.push({ sentAt, status: res.status });
      if (res.status !== 409 || attempts.length >= max)
        return { res, attempts, answeredAt: performance.now() };
      await new Promise((r) => setTimeout(r, RETRY_EVERY_MS));
    }
  }

  async function expectOnePayout(partnerId: string, key: string, payoutId: string) {
    expect(await claimRow(partnerId, key)).toMatchObject({ payout_id: payoutId, state: 'recorded' });
    const { rows } = await stack.db.query<{ id: string }>('SELECT id FROM payouts WHERE partner_id = $1', [
      partnerId,
    ]);
    expect(rows.map((r) => r.id)).toEqual([payoutId]);
    const workflows: string[] = [];
    for await (const wf of stack.temporal.workflow.list({
      query: `WorkflowType = "payoutWorkflow" AND PartnerId = "${partnerId}"`,
    }))
      workflows.push(wf.workflowId);
    expect(workflows).toHaveLength(1);
    expect(stack.providerProxy!.chargesCreated().get(payoutId)).toBe(1);
  }

  function withTails<T>(run: () => Promise<T>): Promise<T> {
    return run().catch((err: unknown) => {
      for (const p of started) process.stderr.write(`--- ${p.name}\n${p.tail(40)}\n`);
      throw err;
    });
  }

  it(
    'restarted on the same port: the first retries after it is ready answer 201 with the same payout, within 2 s',
    () =>
      withTails(async () => {
        const { partnerId, apiKey } = await stack.createPartner();
        const key = `crash-${randomUUID()}`;
        const port = await freePort();
        const first = await startApi(port);
        const { claim, pending } = await heldPost(first.url, apiKey, partnerId, key, 'workflow');

        await first.proc.kill('SIGKILL');
        // The client of the killed request lost its connection: it has no answer.
        expect(await pending).not.toHaveProperty('res');
        await stack.startWorker();
        const second = await startApi(port);
        const ready = performance.now();

        const { res, attempts, answeredAt } = await retry(second.url, apiKey, key, MAX_ATTEMPTS);
        expect(res.status).toBe(201);
        expect((res.json as { id: string }).id).toBe(claim.payout_id);
        // At most 2 s from the api being back to the payout, 409s included.
        expect(answeredAt - ready).toBeLessThan(LEASE_MS);
        expect(attempts.length).toBeLessThanOrEqual(MAX_ATTEMPTS);
        process.stdout.write(
          `api restart: payout after ${Math.round(answeredAt - ready)} ms from ready, ${attempts.length} attempt(s)\n`,
        );
        await expectOnePayout(partnerId, key, claim.payout_id);
        // Answered again, it is a replay of the same payout.
        const replay = await postKey(second.url, apiKey, key);
        expect(replay.status).toBe(201);
        expect(replay.headers.get('idempotent-replayed')).toBe('true');
        expect((replay.json as { id: string }).id).toBe(claim.payout_id);
      }),
    120_000,
  );

  it(
    'a replica already running: retries sent from the moment of the kill get 409 only until the lease runs out',
    () =>
      withTails(async () => {
        const { partnerId, apiKey } = await stack.createPartner();
        const key = `crash-replica-${randomUUID()}`;
        const [doomed, replica] = await Promise.all([freePort().then(startApi), freePort().then(startApi)]);
        const { claim, pending } = await heldPost(doomed.url, apiKey, partnerId, key, 'workflow');

        const killedAt = performance.now();
        await doomed.proc.kill('SIGKILL');
        expect(await pending).not.toHaveProperty('res');
        // The worker starts while the partner retries; the takeover joins the running workflow and
        // waits for its charge as the dead request did.
        const worker = stack.startWorker();
        const { res, attempts } = await retry(replica.url, apiKey, key, 2 * MAX_ATTEMPTS);
        await worker;

        expect(res.status).toBe(201);
        expect((res.json as { id: string }).id).toBe(claim.payout_id);
        // The dead request's lease runs out at most CLAIM_LEASE_SECONDS after the kill (it renewed
        // it last before): the retry sent next takes it over (slack for a loaded machine).
        const takenOverBy = attempts[attempts.length - 1]!.sentAt - killedAt;
        expect(takenOverBy).toBeLessThan(LEASE_MS + RETRY_EVERY_MS + 1_000);
        expect(attempts.slice(0, -1).every((a) => a.status === 409)).toBe(true);
        process.stdout.write(
          `replica: taken over by a retry sent ${Math.round(takenOverBy)} ms after the kill, ` +
            `after ${attempts.length - 1} conflict(s)\n`,
        );
        await expectOnePayout(partnerId, key, claim.payout_id);
      }),
    120_000,
  );
  it(
    'killed while its own charge request was out (D81): the retry gets the payout with that charge, within 2 s',
    () =>
      withTails(async () => {
        const { partnerId, apiKey } = await stack.createPartner();
        const key = `crash-charge-${randomUUID()}`;
        const port = await freePort();
        const first = await startApi(port);
        const { claim, pending, release } = await heldPost(first.url, apiKey, partnerId, key, 'charge');

        await first.proc.kill('SIGKILL');
        expect(await pending).not.toHaveProperty('res');
        // The dead request's charge request reaches the provider after all: the charge exists, its
        // answer is lost, and no workflow was started.
        release();
        await until('the held charge to be created', async () =>
          stack.providerProxy!.chargesCreated().get(claim.payout_id) === 1 ? true : undefined,
        );
        await expect(stack.temporal.workflow.getHandle(claim.workflow_id).describe()).rejects.toThrow(
          WorkflowNotFoundError,
        );
        await stack.startWorker();
        const second = await startApi(port);
        const ready = performance.now();

        const { res, answeredAt } = await retry(second.url, apiKey, key, MAX_ATTEMPTS);
        expect(res.status).toBe(201);
        expect((res.json as { id: string }).id).toBe(claim.payout_id);
        expect(answeredAt - ready).toBeLessThan(LEASE_MS);
        // One payout, one charge: the retry's request was answered the charge the dead one created.
        await expectOnePayout(partnerId, key, claim.payout_id);
        expect(stack.providerProxy!.chargeRequests().get(claim.payout_id)).toBe(2);
        const read = await stack.waitForStatus(apiKey, claim.payout_id, ['PENDING']);
        expect(read.pix_copy_paste).toBe((res.json as { pix_copy_paste: string }).pix_copy_paste);
      }),
    120_000,
  );
});
