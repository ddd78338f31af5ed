/**
 * Cobs on the API Pix face and the payer paying them on the plain face, over real HTTPS and HTTP:
 * create, repeat, read, remove, pay by pixCopiaECola, and what a bank refuses.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { encodeDynamicBrCode, parseBrCode } from '../../src/domain/brcode';
import { cobBody, newTxid, PIX_KEY, startApiPixSandbox, type ApiPixSandbox } from './api-pix-support';

let sandbox: ApiPixSandbox;

beforeAll(async () => {
  sandbox = await startApiPixSandbox();
});

afterAll(async () => {
  await sandbox?.close();
});

type Cob = Record<string, unknown> & {
  pixCopiaECola: string;
  location: string;
  pix?: Record<string, unknown>[];
};

async function createCob(
  original: string,
  extra: Record<string, unknown> = {},
): Promise<{ txid: string; cob: Cob }> {
  const txid = newTxid();
  const res = await sandbox.api('PUT', `/cob/${txid}`, cobBody(original, extra));
  expect(res.status).toBe(201);
  return { txid, cob: res.json as Cob };
}

const pay = (code: string, extra: Record<string, unknown> = {}) =>
  sandbox.plainCall('POST', '/sandbox/payments', { pix_copy_paste: code, ...extra });

describe('PUT /cob/{txid}', () => {
  it('creates an ATIVA cob with a dynamic BR Code pointing at its location', async () => {
    const { txid, cob } = await createCob('100.00', { devedor: { cpf: '12345678909', nome: 'Fulano' } });
    expect(cob).toEqual({
      calendario: { criacao: expect.any(String), expiracao: 3600 },
      txid,
      revisao: 0,
      loc: { id: expect.any(Number), location: cob.location, tipoCob: 'cob', criacao: expect.any(String) },
      location: expect.stringMatching(/^[a-z.]+\/qr\/v2\/[0-9a-f]{32}$/),
      status: 'ATIVA',
      devedor: { cpf: '12345678909', nome: 'Fulano' },
      valor: { original: '100.00', modalidadeAlteracao: 0 },
      chave: PIX_KEY,
      solicitacaoPagador: 'Pagamento de teste',
      pixCopiaECola: expect.any(String),
    });
    const code = parseBrCode(cob.pixCopiaECola);
    expect(code).toMatchObject({
      pointOfInitiationMethod: '12',
      merchantAccount: { gui: 'br.gov.bcb.pix', url: cob.location },
      transactionAmount: '100.00',
      txid: '***',
    });
    expect(code.merchantAccount.key).toBeUndefined();
    expect((await sandbox.api('GET', `/cob/${txid}`)).json).toEqual(cob);
  });

  it('answers a repeated txid 400 CobOperacaoInvalida and keeps the one cob', async () => {
    const { txid, cob } = await createCob('10.00');
    for (const body of [cobBody('10.00'), cobBody('99.00')]) {
      const again = await sandbox.api('PUT', `/cob/${txid}`, body);
      expect(again.status).toBe(400);
      expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(again.json).toMatchObject({
        type: 'https://pix.bcb.gov.br/api/v2/error/CobOperacaoInvalida',
        title: expect.any(String),
        status: 400,
        detail: expect.stringContaining('txid já utilizado'),
        violacoes: [{ propriedade: 'txid', razao: expect.any(String), valor: txid }],
      });
    }
    expect((await sandbox.api('GET', `/cob/${txid}`)).json).toEqual(cob);
  });

  it('refuses another key, a bad txid, a bad amount and an unknown cob', async () => {
    const otherKey = await sandbox.api('PUT', `/cob/${newTxid()}`, {
      ...cobBody('1.00'),
      chave: 'other@example.com',
    });
    expect(otherKey).toMatchObject({ status: 400, json: { violacoes: [{ propriedade: 'cob.chave' }] } });
    expect((await sandbox.api('PUT', '/cob/short', cobBody('1.00'))).status).toBe(400);
    const badAmount = await sandbox.api('PUT', `/cob/${newTxid()}`, cobBody('1.5'));
    expect(badAmount).toMatchObject({
      status: 400,
      json: { violacoes: [{ propriedade: 'cob.valor.original' }] },
    });
    expect((await sandbox.api('PUT', `/cob/${newTxid()}`, cobBody('0.00'))).status).toBe(400);
    expect(await sandbox.api('GET', `/cob/${newTxid()}`)).toMatchObject({
      status: 404,
      json: { type: 'https://pix.bcb.gov.br/api/v2/error/CobNaoEncontrado', status: 404 },
    });
  });
});

describe('PATCH /cob/{txid}', () => {
  const removal = { status: 'REMOVIDA_PELO_USUARIO_RECEBEDOR' };

  it('removes an ATIVA cob; the payer is then refused 410', async () => {
    const { txid, cob } = await createCob('20.00');
    const removed = await sandbox.api('PATCH', `/cob/${txid}`, removal);
    expect(removed).toMatchObject({
      status: 200,
      json: { txid, status: 'REMOVIDA_PELO_USUARIO_RECEBEDOR', revisao: 1 },
    });
    expect((await sandbox.api('GET', `/cob/${txid}`)).json).toMatchObject({
      status: 'REMOVIDA_PELO_USUARIO_RECEBEDOR',
    });
    expect(await pay(cob.pixCopiaECola)).toEqual({
      status: 410,
      json: { error: 'charge was removed by the receiver' },
    });
    expect((await sandbox.api('GET', `/cob/${txid}`)).json).not.toHaveProperty('pix');
  });

  it('refuses to remove a paid cob (400) and an unknown one (404)', async () => {
    const { txid, cob } = await createCob('21.00');
    expect((await pay(cob.pixCopiaECola)).status).toBe(202);
    const refused = await sandbox.api('PATCH', `/cob/${txid}`, removal);
    expect(refused).toMatchObject({
      status: 400,
      json: {
        type: 'https://pix.bcb.gov.br/api/v2/error/CobOperacaoInvalida',
        detail: expect.stringContaining('paga'),
      },
    });
    expect((await sandbox.api('GET', `/cob/${txid}`)).json).toMatchObject({ status: 'CONCLUIDA' });
    expect((await sandbox.api('PATCH', `/cob/${newTxid()}`, removal)).status).toBe(404);
    expect((await sandbox.api('PATCH', `/cob/${txid}`, { status: 'ATIVA' })).status).toBe(400);
  });
});

describe('the payer paying a cob by its pixCopiaECola', () => {
  it('pays once: a Pix with a real endToEndId, the cob CONCLUIDA, GET /pix serves it', async () => {
    const { txid, cob } = await createCob('33.10');
    const paid = await pay(cob.pixCopiaECola, { info_pagador: 'obrigado' });
    expect(paid).toEqual({
      status: 202,
      json: { txid, end_to_end_id: expect.any(String), event_id: expect.any(String), status: 'accepted' },
    });
    const e2eid = (paid.json as { end_to_end_id: string }).end_to_end_id;
    expect(e2eid).toMatch(/^E\d{8}\d{12}[a-zA-Z0-9]{11}$/);
    expect(e2eid).toHaveLength(32);
    const pix = {
      endToEndId: e2eid,
      txid,
      valor: '33.10',
      chave: PIX_KEY,
      horario: expect.any(String),
      infoPagador: 'obrigado',
    };
    expect((await sandbox.api('GET', `/cob/${txid}`)).json).toMatchObject({
      status: 'CONCLUIDA',
      pix: [pix],
    });
    expect(await sandbox.api('GET', `/pix/${e2eid}`)).toMatchObject({ status: 200, json: pix });
    // A dynamic code is paid once.
    expect(await pay(cob.pixCopiaECola)).toEqual({
      status: 409,
      json: { error: 'charge already paid: a dynamic code is paid once' },
    });
    expect(((await sandbox.api('GET', `/cob/${txid}`)).json as Cob).pix).toHaveLength(1);
  });

  it('refuses an edited amount when modalidadeAlteracao is 0, takes it when 1', async () => {
    const fixed = await createCob('50.00');
    expect(await pay(fixed.cob.pixCopiaECola, { amount_brl: 49.99 })).toEqual({
      status: 400,
      json: { error: 'the amount of this charge cannot be changed (valor.modalidadeAlteracao 0)' },
    });
    expect((await sandbox.api('GET', `/cob/${fixed.txid}`)).json).toMatchObject({ status: 'ATIVA' });
    const editable = await createCob('50.00', { valor: { original: '50.00', modalidadeAlteracao: 1 } });
    expect((await pay(editable.cob.pixCopiaECola, { amount_brl: 45 })).status).toBe(202);
    expect((await sandbox.api('GET', `/cob/${editable.txid}`)).json).toMatchObject({
      status: 'CONCLUIDA',
      pix: [{ valor: '45.00' }],
    });
  });

  it('refuses a tampered code, an unknown location and an expired cob', async () => {
    const { cob } = await createCob('12.00');
    const tampered = cob.pixCopiaECola.replace('540512.00', '540511.00');
    expect((await pay(tampered)).status).toBe(400); // CRC no longer matches
    const elsewhere = encodeDynamicBrCode({
      location: 'pix.sandbox.local/qr/v2/00000000000000000000000000000000',
      merchantName: 'PIX SANDBOX PROVIDER',
      merchantCity: 'SAO PAULO',
      amount: '12.00',
    });
    expect(await pay(elsewhere)).toEqual({ status: 404, json: { error: 'unknown charge' } });
    // A valid code whose amount is not the cob's (re-encoded, not edited): refused too.
    const otherAmount = encodeDynamicBrCode({
      location: cob.location,
      merchantName: 'PIX SANDBOX PROVIDER',
      merchantCity: 'SAO PAULO',
      amount: '11.00',
    });
    expect(await pay(otherAmount)).toEqual({
      status: 400,
      json: { error: 'pix_copy_paste amount does not match the charge' },
    });
    const expiring = await createCob('12.00', { calendario: { expiracao: 1 } });
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await pay(expiring.cob.pixCopiaECola)).toEqual({ status: 410, json: { error: 'charge expired' } });
    // An expired unpaid cob stays ATIVA in its body, as real PSPs serve it.
    expect((await sandbox.api('GET', `/cob/${expiring.txid}`)).json).toMatchObject({ status: 'ATIVA' });
  });

  it('answers 404 for an unknown e2eid', async () => {
    expect(await sandbox.api('GET', '/pix/E99999999202601010000abcdefghijk')).toMatchObject({
      status: 404,
      json: { type: 'https://pix.bcb.gov.br/api/v2/error/PixNaoEncontrado' },
    });
  });

  it('lists received Pix by time (GET /pix)', async () => {
    const since = new Date(Date.now() - 1_000).toISOString();
    const { cob } = await createCob('7.00');
    const e2eid = ((await pay(cob.pixCopiaECola)).json as { end_to_end_id: string }).end_to_end_id;
    const until = new Date(Date.now() + 1_000).toISOString();
    const list = await sandbox.api('GET', `/pix?inicio=${since}&fim=${until}`);
    expect(list.status).toBe(200);
    const body = list.json as {
      pix: { endToEndId: string }[];
      parametros: { paginacao: { paginaAtual: number } };
    };
    expect(body.pix.map((p) => p.endToEndId)).toContain(e2eid);
    expect(body.parametros.paginacao.paginaAtual).toBe(0);
    expect((await sandbox.api('GET', `/pix?inicio=${until}&fim=${since}`)).status).toBe(400);
  });
});

test('SANDBOX_STATE_FILE keeps cobs, Pix and devoluções across a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-pix-state-'));
  const stateFile = join(dir, 'state.json');
  const certDir = join(dir, 'certs');
  try {
    let running = await startApiPixSandbox({ stateFile, certDir });
    const txid = newTxid();
    const created = await running.api('PUT', `/cob/${txid}`, cobBody('8.00'));
    const code = (created.json as Cob).pixCopiaECola;
    const e2eid = (
      (await running.plainCall('POST', '/sandbox/payments', { pix_copy_paste: code })).json as {
        end_to_end_id: string;
      }
    ).end_to_end_id;
    expect((await running.api('PUT', `/pix/${e2eid}/devolucao/d1`, { valor: '3.00' })).status).toBe(201);
    const before = (await running.api('GET', `/cob/${txid}`)).json;
    await running.close();

    running = await startApiPixSandbox({ stateFile, certDir });
    try {
      // The devolução accepted before the restart settles after it, once.
      expect((await running.api('GET', `/cob/${txid}`)).json).toMatchObject({
        txid,
        status: 'CONCLUIDA',
        location: (before as Cob).location,
        pixCopiaECola: code,
        pix: [{ endToEndId: e2eid, valor: '8.00', devolucoes: [{ id: 'd1', valor: '3.00' }] }],
      });
      expect((await running.api('PUT', `/cob/${txid}`, cobBody('8.00'))).status).toBe(400);
      expect((await running.plainCall('POST', '/sandbox/payments', { pix_copy_paste: code })).status).toBe(
        409,
      );
      const settled = await (async () => {
        for (let i = 0; i < 100; i += 1) {
          const d = await running.api('GET', `/pix/${e2eid}/devolucao/d1`);
          if ((d.json as { status: string }).status !== 'EM_PROCESSAMENTO') return d.json;
          await new Promise((r) => setTimeout(r, 50));
        }
        return undefined;
      })();
      expect(settled).toMatchObject({ status: 'DEVOLVIDO', valor: '3.00' });
      expect((await running.plainCall('GET', '/sandbox/returns')).json).toEqual({
        returns: [expect.objectContaining({ end_to_end_id: e2eid, devolucao_id: 'd1', valor: '3.00' })],
      });
      // The next cob gets a location id never used before.
      const next = await running.api('PUT', `/cob/${newTxid()}`, cobBody('1.00'));
      expect((next.json as { loc: { id: number } }).loc.id).toBeGreaterThan(
        (before as { loc: { id: number } }).loc.id,
      );
    } finally {
      await running.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
