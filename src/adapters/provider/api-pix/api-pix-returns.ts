import { parseDecimal } from '../../../domain/money';
import { invalid } from '../http-answers';
import { ProviderError, type PaymentReturn, type PaymentReturns } from '../types';
import { devolucaoSchema, endToEndIdSchema } from './api-pix-bodies';
import type { ApiPixCall } from './api-pix-call';

/**
 * The devolução's id (API Pix allows `[a-zA-Z0-9]{1,35}`) from our refund id, the refund case's UUID:
 * its 32 hex digits. Derived, never drawn, so a retry or a worker that crashed after the PUT names the
 * same devolução, which the institution answers as the one it already has.
 */
export function devolucaoIdOf(refundId: string): string {
  const id = refundId.replace(/-/g, '').toLowerCase();
  if (!/^[a-f0-9]{32}$/.test(id)) throw new Error(`refund id ${refundId} is not a UUID`);
  return id;
}

/** API Pix's `descricao` is at most 140 characters; the same reason gives the same text on a retry. */
const MAX_DESCRICAO = 140;

/**
 * Returns through API Pix: `PUT /pix/{e2eid}/devolucao/{id}`, then `GET` of the same path until
 * DEVOLVIDO or NAO_REALIZADO. Every answer is checked to be the devolução asked for.
 */
export function createApiPixReturns(call: ApiPixCall): PaymentReturns {
  const path = (e2eid: string, id: string) => `/pix/${e2eid}/devolucao/${id}`;

  function check(operation: string, body: { id: string; valor: string }, id: string, amountBrl?: string) {
    if (body.id !== id) throw invalid(operation, 'id differs from the request');
    if (amountBrl !== undefined && parseDecimal(body.valor, 2) !== parseDecimal(amountBrl, 2)) {
      throw invalid(operation, 'valor differs from the request');
    }
  }

  const read = (operation: string, e2eid: string, id: string) =>
    call({
      operation,
      method: 'GET',
      path: path(e2eid, id),
      schema: devolucaoSchema,
      notFoundCode: 'unknown_return',
    });

  return {
    async requestReturn(req) {
      const e2eid = endToEndIdOf('requestReturn', req.eventId);
      const id = devolucaoIdOf(req.refundId);
      try {
        const body = await call({
          operation: 'requestReturn',
          method: 'PUT',
          path: path(e2eid, id),
          body: { valor: req.amountBrl, natureza: 'ORIGINAL', descricao: req.reason.slice(0, MAX_DESCRICAO) },
          schema: devolucaoSchema,
          notFoundCode: 'unknown_payment',
        });
        check('requestReturn', body, id, req.amountBrl);
        return returnOf(body);
      } catch (err) {
        // An institution may answer a second PUT of the same id with a 4xx (400, 409, 422...) even when
        // it is our own retry after a lost answer: the devolução under our id, if there is one, is then
        // the one we asked for. (A 401 is the token's, not the devolução's.)
        if (
          !(err instanceof ProviderError) ||
          err.httpStatus === undefined ||
          err.httpStatus < 400 ||
          err.httpStatus >= 500 ||
          err.httpStatus === 401 ||
          err.httpStatus === 404
        )
          throw err;
        let existing;
        try {
          existing = await read('requestReturn', e2eid, id);
        } catch (readErr) {
          if (readErr instanceof ProviderError && readErr.code === 'unknown_return') throw err;
          throw readErr;
        }
        check('requestReturn', existing, id, req.amountBrl);
        return returnOf(existing);
      }
    },

    async getReturn(ref) {
      const id = devolucaoIdOf(ref.refundId);
      const body = await read('getReturn', endToEndIdOf('getReturn', ref.eventId), id);
      check('getReturn', body, id);
      return returnOf(body);
    },
  };
}

function endToEndIdOf(operation: string, eventId: string): string {
  if (!endToEndIdSchema.safeParse(eventId).success) {
    throw new ProviderError(`provider ${operation}: not an endToEndId`, 'unknown_payment', false);
  }
  return eventId;
}

function returnOf(body: { rtrId: string; status: string; motivo?: string }): PaymentReturn {
  if (body.status === 'DEVOLVIDO') return { returnId: body.rtrId, status: 'returned' };
  if (body.status === 'NAO_REALIZADO') {
    return { returnId: body.rtrId, status: 'refused', refusalReason: body.motivo ?? 'NAO_REALIZADO' };
  }
  return { returnId: body.rtrId, status: 'returning' };
}
