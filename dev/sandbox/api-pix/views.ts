import { formatCentavos } from '../../../src/domain/money';
import type { Cob, Devolucao, ReceivedPix, SandboxState } from '../state';

/** The API Pix bodies of the records (dates RFC 3339, amounts "100.00"), one home for each. */
export function createViews(state: SandboxState) {
  function devolucaoView(d: Devolucao) {
    return {
      id: d.id,
      rtrId: d.rtrId,
      valor: formatCentavos(d.amountCentavos),
      natureza: d.natureza,
      ...(d.descricao !== undefined && { descricao: d.descricao }),
      horario: {
        solicitacao: d.requestedAt.toISOString(),
        ...(d.settledAt && { liquidacao: d.settledAt.toISOString() }),
      },
      status: d.status,
      ...(d.motivo !== undefined && { motivo: d.motivo }),
    };
  }

  /** A Pix as GET /pix/{e2eid} and the webhook serve it. */
  function pixView(p: ReceivedPix) {
    return {
      endToEndId: p.endToEndId,
      txid: p.txid,
      valor: formatCentavos(p.amountCentavos),
      chave: p.chave,
      horario: p.horario.toISOString(),
      ...(p.infoPagador !== undefined && { infoPagador: p.infoPagador }),
      ...(p.devolucoes.length > 0 && { devolucoes: p.devolucoes.map(devolucaoView) }),
    };
  }

  /** CobGerada, and CobCompleta (with `pix`) once paid. */
  function cobView(cob: Cob) {
    const criacao = cob.createdAt.toISOString();
    const pix = cob.endToEndIds.map((id) => state.receivedPix(id)).filter((p) => p !== undefined);
    return {
      calendario: { criacao, expiracao: cob.expiracao },
      txid: cob.txid,
      revisao: cob.revisao,
      loc: { id: cob.locId, location: cob.location, tipoCob: 'cob', criacao },
      location: cob.location,
      status: cob.status,
      ...(cob.devedor && { devedor: cob.devedor }),
      valor: { original: formatCentavos(cob.amountCentavos), modalidadeAlteracao: cob.modalidadeAlteracao },
      chave: cob.chave,
      ...(cob.solicitacaoPagador !== undefined && { solicitacaoPagador: cob.solicitacaoPagador }),
      pixCopiaECola: cob.pixCopiaECola,
      ...(pix.length > 0 && { pix: pix.map(pixView) }),
    };
  }

  return { cobView, pixView, devolucaoView };
}
