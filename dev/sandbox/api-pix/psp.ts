import { randomBytes } from 'node:crypto';

import type { FastifyBaseLogger } from 'fastify';

import { encodeDynamicBrCode } from '../../../src/domain/brcode';
import { formatCentavos, parseDecimal } from '../../../src/domain/money';
import type { SandboxState, Cob, Devolucao, ReceivedPix } from '../state';
import { Problem, problemType } from './problem';
import { createViews } from './views';
import type { PixPusher } from './webhooks';

/**
 * The receiving PSP behind the API Pix face: cobs, the Pix paid on them, devoluções and the webhook
 * registrations, kept in the sandbox's shared state. Both faces use it: the API Pix app for the
 * receiver's calls, the plain app for the payer (POST /sandbox/payments) and the test controls.
 */

/** Problems the payer's bank answers with on the plain face (status and message only). */
const refused = (status: number, message: string) =>
  new Problem(status, problemType('RequisicaoInvalida'), 'Pagamento recusado', message);

/** The payer's PSP ISPB in endToEndIds and this PSP's in rtrIds (any 8 digits do in a sandbox). */
const PAYER_ISPB = '99999999';
const RECEIVER_ISPB = '99999998';
/** Host of the cobs' locations (never fetched: the payer here is POST /sandbox/payments). */
const LOCATION_PREFIX = 'pix.sandbox.local/qr/v2/';
const DEFAULT_EXPIRACAO = 86_400;

/** `E|D` + ISPB + yyyyMMddHHmm (UTC) + 11 alphanumerics: the 32 characters of an SPI id. */
function spiId(kind: 'E' | 'D', ispb: string, at: Date): string {
  const stamp = at.toISOString().slice(0, 16).replace(/[-:T]/g, '');
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const tail = [...randomBytes(11)].map((b) => alphabet[b % alphabet.length]).join('');
  return `${kind}${ispb}${stamp}${tail}`;
}

export interface CobInput {
  calendario?: { expiracao?: number };
  valor: { original: string; modalidadeAlteracao?: 0 | 1 };
  chave: string;
  solicitacaoPagador?: string;
  devedor?: Record<string, string>;
}

export interface DevolucaoInput {
  valor: string;
  natureza?: 'ORIGINAL' | 'RETIRADA';
  descricao?: string;
}

export interface PaymentInput {
  /** Field 26-25 of the code paid. */
  location: string;
  /** Field 54 of the code paid, if any. */
  codeAmount?: string;
  /** What the payer typed, if anything. */
  paidCentavos?: bigint;
  infoPagador?: string;
  notify: boolean;
}

export interface PspOptions {
  state: SandboxState;
  pixKey: string;
  merchantName: string;
  merchantCity: string;
  pusher: PixPusher;
  logger: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  now: () => Date;
  /** From a devolução's request to its final status. Default 1 s. */
  devolucaoDelayMs?: number;
}

export type ApiPixPsp = ReturnType<typeof createApiPixPsp>;

export function createApiPixPsp(opts: PspOptions) {
  const { state, now, logger } = opts;
  const delayMs = opts.devolucaoDelayMs ?? 1_000;
  const timers = new Set<NodeJS.Timeout>();
  let refusals = 0;

  const cobInvalid = (razao: string, propriedade: string, valor?: string) =>
    new Problem(400, problemType('CobOperacaoInvalida'), 'Cobrança inválida.', razao, [
      { razao, propriedade, ...(valor !== undefined && { valor }) },
    ]);
  const devolucaoInvalid = (razao: string, propriedade: string) =>
    new Problem(400, problemType('PixDevolucaoInvalida'), 'Devolução inválida.', razao, [
      { razao, propriedade },
    ]);

  function cobOrThrow(txid: string): Cob {
    const cob = state.cob(txid);
    if (!cob)
      throw new Problem(
        404,
        problemType('CobNaoEncontrado'),
        'Cobrança não encontrada.',
        `Cobrança ${txid} não encontrada.`,
      );
    return cob;
  }

  function pixOrThrow(e2eid: string): ReceivedPix {
    const pix = state.receivedPix(e2eid);
    if (!pix)
      throw new Problem(
        404,
        problemType('PixNaoEncontrado'),
        'Pix não encontrado.',
        `Pix ${e2eid} não encontrado.`,
      );
    return pix;
  }

  const { cobView, pixView, devolucaoView } = createViews(state);

  function pushPix(pix: ReceivedPix): boolean {
    const hook = state.pixWebhook(pix.chave);
    if (!hook) {
      logger.info({ end_to_end_id: pix.endToEndId }, 'no webhook registered for the key: nothing pushed');
      return false;
    }
    opts.pusher.push(hook.webhookUrl, pixView(pix));
    return true;
  }

  function settle(pix: ReceivedPix, devolucao: Devolucao): void {
    if (devolucao.status !== 'EM_PROCESSAMENTO') return;
    const at = now();
    if (devolucao.refuse) {
      devolucao.status = 'NAO_REALIZADO';
      devolucao.motivo = 'Devolução recusada pelo sandbox (POST /sandbox/devolucoes/refuse)';
      state.save();
    } else {
      devolucao.status = 'DEVOLVIDO';
      devolucao.settledAt = at;
      // Saved with the devolução's new status: the payer is credited exactly once.
      state.addReturn({
        rtrId: devolucao.rtrId,
        endToEndId: pix.endToEndId,
        devolucaoId: devolucao.id,
        amountCentavos: devolucao.amountCentavos,
        returnedAt: at,
      });
    }
    logger.info(
      { end_to_end_id: pix.endToEndId, devolucao_id: devolucao.id, status: devolucao.status },
      'devolução final',
    );
    // Institutions call the webhook again when a devolução reaches a final status.
    pushPix(pix);
  }

  function schedule(pix: ReceivedPix, devolucao: Devolucao): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      settle(pix, devolucao);
    }, delayMs);
    timers.add(timer);
  }

  // A restarted sandbox (SANDBOX_STATE_FILE) finishes the devoluções it had accepted.
  for (const pix of state.allReceivedPix()) {
    for (const d of pix.devolucoes) if (d.status === 'EM_PROCESSAMENTO') schedule(pix, d);
  }

  return {
    cobView,
    pixView,
    devolucaoView,

    createCob(txid: string, input: CobInput) {
      if (input.chave !== opts.pixKey) {
        throw cobInvalid(
          'O campo cob.chave corresponde a uma conta que não pertence a este usuário recebedor.',
          'cob.chave',
          input.chave,
        );
      }
      const amountCentavos = parseDecimal(input.valor.original, 2);
      if (amountCentavos === 0n)
        throw cobInvalid('O campo cob.valor.original é zero.', 'cob.valor.original', input.valor.original);
      // A repeated PUT never makes a second cob, whatever its body (a real PSP answers so too).
      if (state.cob(txid))
        throw cobInvalid(`txid já utilizado: ${txid} já identifica uma cobrança.`, 'txid', txid);
      const createdAt = now();
      const location = `${LOCATION_PREFIX}${randomBytes(16).toString('hex')}`;
      const cob: Cob = {
        txid,
        revisao: 0,
        createdAt,
        expiracao: input.calendario?.expiracao ?? DEFAULT_EXPIRACAO,
        amountCentavos,
        modalidadeAlteracao: input.valor.modalidadeAlteracao ?? 0,
        chave: input.chave,
        ...(input.solicitacaoPagador !== undefined && { solicitacaoPagador: input.solicitacaoPagador }),
        ...(input.devedor && { devedor: input.devedor }),
        locId: state.nextLocId(),
        location,
        pixCopiaECola: encodeDynamicBrCode({
          location,
          merchantName: opts.merchantName,
          merchantCity: opts.merchantCity,
          amount: formatCentavos(amountCentavos),
        }),
        status: 'ATIVA',
        endToEndIds: [],
      };
      state.addCob(cob);
      logger.info({ txid, valor: input.valor.original }, 'cob created');
      return cobView(cob);
    },

    getCob: (txid: string) => cobView(cobOrThrow(txid)),

    removeCob(txid: string) {
      const cob = cobOrThrow(txid);
      if (cob.status !== 'ATIVA') {
        const why = cob.status === 'CONCLUIDA' ? 'ela já foi paga' : 'ela já foi removida';
        throw cobInvalid(`A cobrança não está ATIVA (${cob.status}): ${why}.`, 'cob.status', cob.status);
      }
      cob.status = 'REMOVIDA_PELO_USUARIO_RECEBEDOR';
      cob.revisao += 1;
      state.save();
      logger.info({ txid }, 'cob removed');
      return cobView(cob);
    },

    getPix: (e2eid: string) => pixView(pixOrThrow(e2eid)),

    /** GET /pix: received in [inicio, fim] (ms), oldest first, one page. */
    listPix(
      inicio: number,
      fim: number,
      pagina: number,
      porPagina: number,
      echo: { inicio: string; fim: string },
    ) {
      const all = state
        .allReceivedPix()
        .filter((p) => p.horario.getTime() >= inicio && p.horario.getTime() <= fim)
        .sort((a, b) => a.horario.getTime() - b.horario.getTime());
      return {
        parametros: {
          ...echo,
          paginacao: {
            paginaAtual: pagina,
            itensPorPagina: porPagina,
            quantidadeDePaginas: Math.ceil(all.length / porPagina),
            quantidadeTotalDeItens: all.length,
          },
        },
        pix: all.slice(pagina * porPagina, (pagina + 1) * porPagina).map(pixView),
      };
    },

    requestDevolucao(e2eid: string, id: string, input: DevolucaoInput) {
      const pix = pixOrThrow(e2eid);
      const amountCentavos = parseDecimal(input.valor, 2);
      const natureza = input.natureza ?? 'ORIGINAL';
      const existing = pix.devolucoes.find((d) => d.id === id);
      if (existing) {
        const same =
          existing.amountCentavos === amountCentavos &&
          existing.natureza === natureza &&
          existing.descricao === input.descricao;
        if (!same) throw devolucaoInvalid(`O id ${id} já foi utilizado por outra devolução deste Pix.`, 'id');
        return devolucaoView(existing);
      }
      if (amountCentavos === 0n) throw devolucaoInvalid('O campo devolucao.valor é zero.', 'devolucao.valor');
      const committed = pix.devolucoes
        .filter((d) => d.status !== 'NAO_REALIZADO')
        .reduce((sum, d) => sum + d.amountCentavos, 0n);
      if (committed + amountCentavos > pix.amountCentavos) {
        throw devolucaoInvalid(
          'A devolução, com as anteriores, excederia o valor do Pix.',
          'devolucao.valor',
        );
      }
      const requestedAt = now();
      const devolucao: Devolucao = {
        id,
        rtrId: spiId('D', RECEIVER_ISPB, requestedAt),
        amountCentavos,
        natureza,
        ...(input.descricao !== undefined && { descricao: input.descricao }),
        requestedAt,
        status: 'EM_PROCESSAMENTO',
        ...(refusals > 0 && { refuse: true }),
      };
      if (refusals > 0) refusals -= 1;
      pix.devolucoes.push(devolucao);
      state.save();
      logger.info({ end_to_end_id: e2eid, devolucao_id: id, valor: input.valor }, 'devolução requested');
      schedule(pix, devolucao);
      return devolucaoView(devolucao);
    },

    getDevolucao(e2eid: string, id: string) {
      const devolucao = pixOrThrow(e2eid).devolucoes.find((d) => d.id === id);
      if (!devolucao) {
        throw new Problem(
          404,
          problemType('PixDevolucaoNaoEncontrada'),
          'Devolução não encontrada.',
          `Devolução ${id} não encontrada para o Pix ${e2eid}.`,
        );
      }
      return devolucaoView(devolucao);
    },

    setWebhook(chave: string, webhookUrl: string): void {
      if (chave !== opts.pixKey) {
        const razao = 'A chave não pertence a este usuário recebedor.';
        throw new Problem(400, problemType('WebhookOperacaoInvalida'), 'Webhook inválido.', razao, [
          { razao, propriedade: 'chave', valor: chave },
        ]);
      }
      state.setPixWebhook({ chave, webhookUrl, createdAt: now() });
      logger.info({ chave, webhook_url: webhookUrl }, 'pix webhook registered');
    },

    getWebhook(chave: string) {
      const hook = state.pixWebhook(chave);
      if (!hook)
        throw new Problem(
          404,
          problemType('WebhookNaoEncontrado'),
          'Webhook não encontrado.',
          `Nenhum webhook para a chave ${chave}.`,
        );
      return { webhookUrl: hook.webhookUrl, chave: hook.chave, criacao: hook.createdAt.toISOString() };
    },

    deleteWebhook(chave: string): void {
      if (!state.deletePixWebhook(chave)) {
        throw new Problem(
          404,
          problemType('WebhookNaoEncontrado'),
          'Webhook não encontrado.',
          `Nenhum webhook para a chave ${chave}.`,
        );
      }
    },

    /** The payer's bank paying a dynamic code: refused as a real bank refuses it, or one Pix. */
    pay(input: PaymentInput): ReceivedPix {
      const cob = state.cobByLocation(input.location);
      if (!cob) throw refused(404, 'unknown charge');
      if (cob.status === 'REMOVIDA_PELO_USUARIO_RECEBEDOR' || cob.status === 'REMOVIDA_PELO_PSP') {
        throw refused(410, 'charge was removed by the receiver');
      }
      if (cob.status === 'CONCLUIDA') throw refused(409, 'charge already paid: a dynamic code is paid once');
      if (now().getTime() > cob.createdAt.getTime() + cob.expiracao * 1000)
        throw refused(410, 'charge expired');
      if (input.codeAmount === undefined || parseDecimal(input.codeAmount, 2) !== cob.amountCentavos) {
        throw refused(400, 'pix_copy_paste amount does not match the charge');
      }
      const amountCentavos = input.paidCentavos ?? cob.amountCentavos;
      if (amountCentavos !== cob.amountCentavos && cob.modalidadeAlteracao === 0) {
        throw refused(400, 'the amount of this charge cannot be changed (valor.modalidadeAlteracao 0)');
      }
      const horario = now();
      const pix: ReceivedPix = {
        endToEndId: spiId('E', PAYER_ISPB, horario),
        txid: cob.txid,
        amountCentavos,
        chave: cob.chave,
        horario,
        ...(input.infoPagador !== undefined && { infoPagador: input.infoPagador }),
        devolucoes: [],
      };
      state.addReceivedPix(pix, cob);
      logger.info(
        {
          txid: cob.txid,
          end_to_end_id: pix.endToEndId,
          valor: formatCentavos(amountCentavos),
          notify: input.notify,
        },
        'pix received',
      );
      if (input.notify) pushPix(pix);
      return pix;
    },

    /** Pushes a Pix again; false when no Pix has this id. Throws when its key has no webhook. */
    redeliver(e2eid: string): boolean {
      const pix = state.receivedPix(e2eid);
      if (!pix) return false;
      if (!pushPix(pix)) throw refused(409, `no webhook registered for the key ${pix.chave}`);
      return true;
    },

    /** Test control: the next `count` devoluções requested end NAO_REALIZADO. */
    refuseNextDevolucoes(count: number): void {
      refusals = count;
    },

    returns: () =>
      state.allReturns().map((r) => ({
        rtr_id: r.rtrId,
        end_to_end_id: r.endToEndId,
        devolucao_id: r.devolucaoId,
        valor: formatCentavos(r.amountCentavos),
        returned_at: r.returnedAt.toISOString(),
      })),

    async close(): Promise<void> {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await opts.pusher.close();
    },
  };
}
