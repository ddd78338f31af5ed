/**
 * The API Pix face's webhook pushes (to a real local HTTP server) and devoluções, with the payer's
 * returns recorded on the plain face.
 */
import https from 'node:https';
import type { TLSSocket } from 'node:tls';

import { freePort } from '../../dev/local/infra/ports';
import { until } from '../support/until';
import {
  cobBody,
  newTxid,
  PIX_KEY,
  startApiPixSandbox,
  startPixReceiver,
  type ApiPixSandbox,
  type PixReceiver,
} from './api-pix-support';

let sandbox: ApiPixSandbox;
let receiver: PixReceiver;

beforeAll(async () => {
  // A wide batch window, so two payments made together surely share one push.
  sandbox = await startApiPixSandbox({ deps: { batchMs: 500 } });
  receiver = await startPixReceiver();
});

afterAll(async () => {
  await sandbox?.close();
  await receiver?.close();
});

beforeEach(async () => {
  expect((await sandbox.api('PUT', `/webhook/${PIX_KEY}`, { webhookUrl: receiver.url })).status).toBe(200);
  receiver.posts.length = 0;
});

/** A paid cob of `original`: its e2eid. */
async function paidPix(original: string, notify = true): Promise<string> {
  const created = await sandbox.api('PUT', `/cob/${newTxid()}`, cobBody(original));
  const code = (created.json as { pixCopiaECola: string }).pixCopiaECola;
  const paid = await sandbox.plainCall('POST', '/sandbox/payments', { pix_copy_paste: code, notify });
  expect(paid.status).toBe(202);
  return (paid.json as { end_to_end_id: string }).end_to_end_id;
}

const delivered = () => receiver.posts.filter((p) => p.status === 200);
const pushedIds = () => delivered().flatMap((p) => p.body.pix.map((x) => x.endToEndId));

describe('webhook registration', () => {
  it('registers, reads and deletes the webhook of the key; another key is refused', async () => {
    expect(await sandbox.api('GET', `/webhook/${PIX_KEY}`)).toMatchObject({
      status: 200,
      json: { webhookUrl: receiver.url, chave: PIX_KEY, criacao: expect.any(String) },
    });
    expect((await sandbox.api('DELETE', `/webhook/${PIX_KEY}`)).status).toBe(204);
    expect(await sandbox.api('GET', `/webhook/${PIX_KEY}`)).toMatchObject({
      status: 404,
      json: { type: 'https://pix.bcb.gov.br/api/v2/error/WebhookNaoEncontrado' },
    });
    expect((await sandbox.api('DELETE', `/webhook/${PIX_KEY}`)).status).toBe(404);
    const other = await sandbox.api('PUT', '/webhook/other@example.com', { webhookUrl: receiver.url });
    expect(other).toMatchObject({
      status: 400,
      json: { type: expect.stringMatching(/WebhookOperacaoInvalida$/) },
    });
    expect((await sandbox.api('PUT', `/webhook/${PIX_KEY}`, { webhookUrl: 'not a url' })).status).toBe(400);
  });
});

describe('pushes', () => {
  it('POSTs {"pix": [...]} to webhookUrl + /pix, payments close together in one body, as GET /pix serves them', async () => {
    const codes = await Promise.all(
      ['1.00', '2.00'].map(async (v) => {
        const created = await sandbox.api('PUT', `/cob/${newTxid()}`, cobBody(v));
        return (created.json as { pixCopiaECola: string }).pixCopiaECola;
      }),
    );
    const paid = await Promise.all(
      codes.map((code) => sandbox.plainCall('POST', '/sandbox/payments', { pix_copy_paste: code })),
    );
    const [a, b] = paid.map((p) => (p.json as { end_to_end_id: string }).end_to_end_id);
    await until('one push delivered', () => (delivered().length > 0 ? true : undefined), {
      timeoutMs: 10_000,
    });
    expect(receiver.posts).toHaveLength(1);
    const [post] = receiver.posts;
    expect(post?.path).toBe('/hooks/api-pix/pix');
    expect(post?.body.pix.map((p) => p.endToEndId).sort()).toEqual([a, b].sort());
    for (const pix of post?.body.pix ?? [])
      expect(pix).toEqual((await sandbox.api('GET', `/pix/${String(pix.endToEndId)}`)).json);
  });

  it('presents its client certificate to an https webhook', async () => {
    // The receiver here uses the sandbox's own server certificate and CA, and wants a client certificate.
    const seen: string[] = [];
    const server = https.createServer(
      {
        key: sandbox.face.tls.serverKey,
        cert: sandbox.face.tls.serverCert,
        ca: sandbox.face.tls.ca,
        requestCert: true,
      },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        seen.push(
          `${req.url ?? ''} ${(req.socket as TLSSocket).authorized ? 'authorized' : 'unauthorized'} ${peer.subject?.CN ?? ''}`,
        );
        req.resume();
        res.writeHead(200).end();
      },
    );
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      await sandbox.api('PUT', `/webhook/${PIX_KEY}`, { webhookUrl: `https://127.0.0.1:${port}/tls-hook/` });
      await paidPix('2.50');
      await until('the https push', () => (seen.length > 0 ? true : undefined), { timeoutMs: 10_000 });
      expect(seen).toEqual(['/tls-hook/pix authorized payout-service (API Pix client)']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('retries with backoff until a 2xx', async () => {
    receiver.failNext(2);
    const e2eid = await paidPix('3.00');
    await until('the push delivered', () => (pushedIds().includes(e2eid) ? true : undefined), {
      timeoutMs: 10_000,
    });
    expect(receiver.posts.map((p) => p.status)).toEqual([500, 500, 200]);
    expect(receiver.posts.every((p) => p.body.pix[0]?.endToEndId === e2eid)).toBe(true);
  });

  it('pushes nothing with notify:false, and a redelivery by endToEndId pushes that Pix', async () => {
    const e2eid = await paidPix('4.00', false);
    await new Promise((r) => setTimeout(r, 800)); // past the 500 ms batch window: nothing was queued
    expect(receiver.posts).toEqual([]);
    const again = await sandbox.plainCall('POST', '/sandbox/notifications/redeliver', { event_id: e2eid });
    expect(again).toEqual({ status: 202, json: { event_id: e2eid, status: 'accepted' } });
    await until('the redelivery', () => (pushedIds().includes(e2eid) ? true : undefined), {
      timeoutMs: 10_000,
    });
    expect(pushedIds()).toEqual([e2eid]);
  });

  it('pushes nothing for a key without a webhook; a redelivery then says so', async () => {
    await sandbox.api('DELETE', `/webhook/${PIX_KEY}`);
    const e2eid = await paidPix('5.00');
    await new Promise((r) => setTimeout(r, 800));
    expect(receiver.posts).toEqual([]);
    const again = await sandbox.plainCall('POST', '/sandbox/notifications/redeliver', { event_id: e2eid });
    expect(again.status).toBe(409);
  });
});

describe('devoluções', () => {
  const waitFinal = (e2eid: string, id: string) =>
    until(
      `devolução ${id} final`,
      async () => {
        const res = await sandbox.api('GET', `/pix/${e2eid}/devolucao/${id}`);
        const status = (res.json as { status?: string }).status;
        return status === 'EM_PROCESSAMENTO' ? undefined : (res.json as Record<string, unknown>);
      },
      { timeoutMs: 10_000 },
    );
  const returnsOf = async (e2eid: string) =>
    (
      (await sandbox.plainCall('GET', '/sandbox/returns')).json as { returns: { end_to_end_id: string }[] }
    ).returns.filter((r) => r.end_to_end_id === e2eid);

  it('is idempotent on its id, becomes DEVOLVIDO, and the payer is credited once', async () => {
    const e2eid = await paidPix('10.00');
    const body = { valor: '10.00', descricao: 'reembolso' };
    const first = await sandbox.api('PUT', `/pix/${e2eid}/devolucao/dev1`, body);
    expect(first).toMatchObject({
      status: 201,
      json: {
        id: 'dev1',
        rtrId: expect.stringMatching(/^D\d{8}\d{12}[a-zA-Z0-9]{11}$/),
        valor: '10.00',
        natureza: 'ORIGINAL',
        descricao: 'reembolso',
        horario: { solicitacao: expect.any(String) },
        status: 'EM_PROCESSAMENTO',
      },
    });
    const again = await sandbox.api('PUT', `/pix/${e2eid}/devolucao/dev1`, body);
    expect(again.status).toBe(201);
    expect((again.json as { rtrId: string }).rtrId).toBe((first.json as { rtrId: string }).rtrId);
    const other = await sandbox.api('PUT', `/pix/${e2eid}/devolucao/dev1`, { valor: '9.00' });
    expect(other).toMatchObject({
      status: 400,
      json: { type: expect.stringMatching(/PixDevolucaoInvalida$/) },
    });

    expect(await waitFinal(e2eid, 'dev1')).toMatchObject({
      status: 'DEVOLVIDO',
      horario: { solicitacao: expect.any(String), liquidacao: expect.any(String) },
    });
    // A repeat after it settled is still the same devolução, and credits nothing more.
    expect((await sandbox.api('PUT', `/pix/${e2eid}/devolucao/dev1`, body)).json).toMatchObject({
      status: 'DEVOLVIDO',
    });
    await new Promise((r) => setTimeout(r, 400));
    expect(await returnsOf(e2eid)).toEqual([
      {
        rtr_id: (first.json as { rtrId: string }).rtrId,
        end_to_end_id: e2eid,
        devolucao_id: 'dev1',
        valor: '10.00',
        returned_at: expect.any(String),
      },
    ]);
    expect((await sandbox.api('GET', `/pix/${e2eid}`)).json).toMatchObject({
      devolucoes: [{ id: 'dev1', status: 'DEVOLVIDO' }],
    });
    // The webhook is called again when the devolução is final.
    await until(
      'the push of the final devolução',
      () =>
        delivered().some((p) =>
          p.body.pix.some(
            (x) => x.endToEndId === e2eid && JSON.stringify(x.devolucoes ?? []).includes('DEVOLVIDO'),
          ),
        )
          ? true
          : undefined,
      { timeoutMs: 10_000 },
    );
  });

  it('refuses a total over the Pix valor and an unknown Pix', async () => {
    const e2eid = await paidPix('10.00');
    expect((await sandbox.api('PUT', `/pix/${e2eid}/devolucao/a`, { valor: '6.00' })).status).toBe(201);
    const over = await sandbox.api('PUT', `/pix/${e2eid}/devolucao/b`, { valor: '4.01' });
    expect(over).toMatchObject({
      status: 400,
      json: { type: expect.stringMatching(/PixDevolucaoInvalida$/) },
    });
    expect((await sandbox.api('PUT', `/pix/${e2eid}/devolucao/c`, { valor: '4.00' })).status).toBe(201);
    expect((await sandbox.api('GET', `/pix/${e2eid}/devolucao/b`)).status).toBe(404);
    expect(
      (await sandbox.api('PUT', '/pix/E99999999202601010000abcdefghijk/devolucao/a', { valor: '1.00' }))
        .status,
    ).toBe(404);
  });

  it('ends NAO_REALIZADO when a test asks for it, and nothing reaches the payer', async () => {
    const e2eid = await paidPix('10.00');
    expect((await sandbox.plainCall('POST', '/sandbox/devolucoes/refuse', { count: 1 })).status).toBe(201);
    expect((await sandbox.api('PUT', `/pix/${e2eid}/devolucao/r1`, { valor: '10.00' })).status).toBe(201);
    expect(await waitFinal(e2eid, 'r1')).toMatchObject({
      status: 'NAO_REALIZADO',
      motivo: expect.any(String),
    });
    expect(await returnsOf(e2eid)).toEqual([]);
    // A refused one does not count against the valor: a new request for the whole amount goes through.
    expect((await sandbox.api('PUT', `/pix/${e2eid}/devolucao/r2`, { valor: '10.00' })).status).toBe(201);
    expect(await waitFinal(e2eid, 'r2')).toMatchObject({ status: 'DEVOLVIDO' });
    expect(await returnsOf(e2eid)).toHaveLength(1);
  });
});
