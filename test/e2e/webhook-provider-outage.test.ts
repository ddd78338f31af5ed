import { useStack } from '../support/stack';
import { until } from '../support/until';

// docs/decisions.md D21: a provider outage loses nothing. The payment webhook arrives while the
// provider's notification endpoint is unreachable; the event is fetched and applied once it is back.
describe('provider outage while a webhook is processed (real servers)', () => {
  // The service reaches the provider through a proxy the test takes down (connections refused, open
  // ones cut) and brings back; the provider itself keeps running, so its notifications are still
  // there when the service can reach it again.
  const stack = useStack({ proxyProvider: true });
  let apiKey: string;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner());
  });

  it('keeps retrying the fetch and applies the event once the provider is reachable again', async () => {
    const { payout, receiver } = await stack.createPayout(apiKey);
    const payoutId = payout.id;

    await stack.providerProxy!.takeDown();
    await stack.pay(payout.pix_copy_paste); // the payer's bank is not behind the proxy

    // The webhook was acknowledged and its workflow is retrying the fetch. The fetch is a local
    // activity: after its first quick retry, each retry waits on a durable timer in the workflow's
    // history, so two backoff timers mean at least three failed attempts.
    const query = `WorkflowType = 'providerEventWorkflow' AND TaskQueue = '${stack.config.TEMPORAL_TASK_QUEUE}'`;
    const retrying = await until('two backoff timers of the fetch', async () => {
      for await (const wf of stack.temporal.workflow.list({ query })) {
        const handle = stack.temporal.workflow.getHandle(wf.workflowId);
        const running = (await handle.describe()).status.name === 'RUNNING';
        const { events } = await handle.fetchHistory();
        const backoffs = (events ?? []).filter((e) => e.timerStartedEventAttributes).length;
        if (backoffs >= 2) return { running };
      }
      return undefined;
    });
    expect(retrying).toEqual({ running: true });
    const during = await fetch(`${stack.apiUrl}/v1/payouts/${payoutId}`, {
      headers: { 'x-api-key': apiKey },
    });
    expect(((await during.json()) as { status: string }).status).toBe('PENDING');

    await stack.providerProxy!.bringBack();
    const done = await stack.waitForStatus(apiKey, payoutId, ['COMPLETED', 'FAILED'], 40_000);
    expect(done.status).toBe('COMPLETED');
    const transfers = await stack.chain.transfersTo(receiver);
    expect(transfers.count).toBe(1);
    expect(transfers.txHashes).toEqual([done.blockchain_tx_id]);
  }, 60_000);
});
