/**
 * The provider contract against BCB's API Pix: the service's API Pix client (mutual TLS, OAuth2) and
 * the sandbox's API Pix face, with the webhook it pushes read as the service's route reads it.
 */
import { apiPixWebhookBodySchema } from '../../src/api/webhooks/webhook.routes';
import { serviceClientOf, startApiPixSandbox, startPixReceiver } from '../sandbox/api-pix-support';
import { describeProviderContract, type FaultyOperation } from './contract';

const FAULT_ROUTES: Record<FaultyOperation, string> = {
  createCharge: 'PUT /cob/{txid}',
  getChargeStatus: 'GET /cob/{txid}',
  cancelCharge: 'PATCH /cob/{txid}',
  fetchNotification: 'GET /pix/{e2eid}',
};

describeProviderContract('bcb-api-pix', async () => {
  const sandbox = await startApiPixSandbox();
  const receiver = await startPixReceiver();
  const collection = serviceClientOf(sandbox);
  await collection.registerWebhook(receiver.url);
  // The endToEndIds of the pushes answered 2xx, in order, each once (a batch may carry several).
  let taken = 0;
  const tokens = () => [
    ...new Set(
      receiver.posts
        .filter((p) => p.status === 200 && p.path.endsWith('/pix'))
        .flatMap((p) => apiPixWebhookBodySchema.parse(p.body).pix.map((pix) => pix.endToEndId)),
    ),
  ];
  return {
    collection,
    returns: {
      client: collection,
      async payerReturns() {
        const res = await sandbox.plainCall('GET', '/sandbox/returns');
        const body = res.json as { returns: { end_to_end_id: string; devolucao_id: string }[] };
        return body.returns.map((r) => ({ eventId: r.end_to_end_id, refundId: r.devolucao_id }));
      },
      async refuseNext(count) {
        const res = await sandbox.plainCall('POST', '/sandbox/devolucoes/refuse', { count });
        if (res.status >= 300) throw new Error(`refusal not armed: HTTP ${res.status}`);
      },
    },
    pay: (pixCopyPaste) =>
      fetch(`${sandbox.plainUrl}/sandbox/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ pix_copy_paste: pixCopyPaste }),
      }),
    async nextWebhookToken() {
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline) {
        const next = tokens()[taken];
        if (next !== undefined) {
          taken += 1;
          return next;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error('no API Pix webhook within 15 s');
    },
    async failNext(operation, status) {
      const res = await sandbox.plainCall('POST', '/sandbox/faults', {
        route: FAULT_ROUTES[operation],
        status,
        count: 1,
      });
      if (res.status >= 300) throw new Error(`fault not injected: HTTP ${res.status}`);
    },
    async close() {
      await sandbox.close();
      await receiver.close();
    },
  };
});
