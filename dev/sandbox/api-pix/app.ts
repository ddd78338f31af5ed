import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Server } from 'node:https';

import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import { z } from 'zod';

import type { ApiPixConfig } from '../config';
import type { ApiPixTls } from './certificates';
import { API_PIX_FAULT_ROUTES, type FaultRegistry } from './faults';
import { Problem, problemType } from './problem';
import type { ApiPixPsp } from './psp';

export interface ApiPixAppOptions {
  config: ApiPixConfig;
  psp: ApiPixPsp;
  faults: FaultRegistry;
  tls: ApiPixTls;
  logger: FastifyBaseLogger;
  now: () => Date;
}

const API_BASE = '/api/v2';
const SCOPES = 'cob.write cob.read pix.write pix.read webhook.write webhook.read';
const BODY_LIMIT_BYTES = 16 * 1024;

const txidPattern = /^[a-zA-Z0-9]{26,35}$/;
const valor = z.string().regex(/^\d{1,10}\.\d{2}$/, 'deve ser um decimal com 2 casas, ex. "100.00"');
const pessoa = z.union([
  z.strictObject({ cpf: z.string().regex(/^\d{11}$/, 'CPF: 11 dígitos'), nome: z.string().min(1).max(200) }),
  z.strictObject({
    cnpj: z.string().regex(/^[0-9A-Z]{12}\d{2}$/, 'CNPJ: 14 caracteres'),
    nome: z.string().min(1).max(200),
  }),
]);
const cobBody = z.object({
  calendario: z
    .object({ expiracao: z.number().int().positive('deve ser maior que zero').max(2_147_483_647) })
    .partial()
    .optional(),
  devedor: pessoa.optional(),
  valor: z.object({ original: valor, modalidadeAlteracao: z.union([z.literal(0), z.literal(1)]).optional() }),
  chave: z.string().min(1).max(77),
  solicitacaoPagador: z.string().max(140).optional(),
});
const cobPatch = z.strictObject({
  status: z.literal(
    'REMOVIDA_PELO_USUARIO_RECEBEDOR',
    'só a remoção (REMOVIDA_PELO_USUARIO_RECEBEDOR) é aceita',
  ),
});
const devolucaoBody = z.object({
  valor,
  natureza: z.enum(['ORIGINAL', 'RETIRADA']).optional(),
  descricao: z.string().max(140).optional(),
});
const webhookBody = z.object({
  webhookUrl: z.url({ protocol: /^https?$/, error: 'deve ser uma URL http(s)' }),
});
const pixQuery = z.object({
  inicio: z.iso.datetime({ offset: true }),
  fim: z.iso.datetime({ offset: true }),
  'paginacao.paginaAtual': z.coerce.number().int().min(0).default(0),
  'paginacao.itensPorPagina': z.coerce.number().int().min(1).max(1000).default(100),
});

/** Problem types by status, for answers that are not a route's own (faults, framework errors). */
function genericType(status: number): string {
  if (status === 401 || status === 403) return 'AcessoNegado';
  if (status === 404) return 'NaoEncontrado';
  if (status === 410) return 'PermanentementeRemovido';
  if (status === 503 || status === 429) return 'ServicoIndisponivel';
  if (status === 504) return 'IndisponibilidadePorTempoEsgotado';
  if (status >= 500) return 'ErroInternoDoServidor';
  return 'RequisicaoInvalida';
}

function sendProblem(reply: FastifyReply, p: Problem): FastifyReply {
  return reply
    .status(p.status)
    .type('application/problem+json')
    .send({
      type: p.type,
      title: p.title,
      status: p.status,
      detail: p.message,
      ...(p.violacoes && { violacoes: p.violacoes }),
    });
}

const generic = (status: number, title: string, detail: string) =>
  new Problem(status, problemType(genericType(status)), title, detail);

/** Parses or throws `type` 400 with one violation per issue, properties under `prefix`. */
function parse<T extends z.ZodType>(schema: T, value: unknown, type: string, prefix: string): z.infer<T> {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const violacoes = result.error.issues.map((i) => ({
    razao: i.message,
    propriedade: [prefix, ...i.path.map(String)].filter(Boolean).join('.'),
  }));
  throw new Problem(
    400,
    problemType(type),
    'Requisição inválida.',
    violacoes.map((v) => `${v.propriedade}: ${v.razao}`).join('; '),
    violacoes,
  );
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * The API Pix face: BCB's API Pix (bacen/pix-api 2.x) as a receiving PSP serves it, over HTTPS with
 * mutual TLS (a client without a certificate from the sandbox CA is refused in the handshake) and
 * OAuth2 client credentials. Errors are the spec's Problema, as application/problem+json.
 */
export function buildApiPixApp(opts: ApiPixAppOptions): FastifyInstance<Server> {
  const { config, psp, faults, now } = opts;
  const app = Fastify({
    loggerInstance: opts.logger,
    bodyLimit: BODY_LIMIT_BYTES,
    https: {
      key: opts.tls.serverKey,
      cert: opts.tls.serverCert,
      ca: opts.tls.ca,
      requestCert: true,
      rejectUnauthorized: true,
    },
  }) as unknown as FastifyInstance<Server>;

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, request, reply) => {
    if (err instanceof Problem) return sendProblem(reply, err);
    const status = err.statusCode ?? 500;
    if (status >= 500) {
      request.log.error({ err }, 'request failed');
      return sendProblem(reply, generic(500, 'Erro interno do servidor.', 'internal error'));
    }
    const detail = err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ? 'JSON inválido' : err.message;
    return sendProblem(reply, generic(status, 'Requisição inválida.', detail));
  });
  app.setNotFoundHandler((_request, reply) =>
    sendProblem(reply, generic(404, 'Não encontrado.', 'rota inexistente')),
  );

  // Tokens by value, with their expiry (ms). A restart forgets them: the client fetches a new one on 401.
  const tokens = new Map<string, number>();
  const expectedBasic = digest(`${config.clientId}:${config.clientSecret}`);

  app.addHook('onRequest', async (request, reply) => {
    const pattern = `${request.method} ${request.routeOptions.url ?? ''}`;
    const fault = faults.take(pattern);
    if (fault) {
      request.log.info({ route: fault.route, status: fault.status }, 'injected fault');
      return sendProblem(
        reply,
        generic(fault.status, 'Falha simulada.', `sandbox fault: HTTP ${fault.status}`),
      );
    }
    if (!request.url.startsWith(`${API_BASE}/`)) return;
    const match = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '');
    const expiresAt = match?.[1] === undefined ? undefined : tokens.get(match[1]);
    if (expiresAt === undefined || expiresAt <= now().getTime()) {
      void reply.header('www-authenticate', 'Bearer error="invalid_token"');
      return sendProblem(
        reply,
        generic(401, 'Não autorizado.', 'token de acesso ausente, inválido ou expirado'),
      );
    }
  });

  // RFC 6749 client credentials; its errors are OAuth's own JSON, not problem+json.
  app.post('/oauth/token', async (request, reply) => {
    const basic = /^Basic (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    const given = digest(basic === undefined ? '' : Buffer.from(basic, 'base64').toString('utf8'));
    if (!timingSafeEqual(given, expectedBasic)) {
      return reply
        .status(401)
        .header('www-authenticate', 'Basic realm="api-pix"')
        .send({ error: 'invalid_client' });
    }
    const grant = (request.body as Record<string, unknown> | undefined)?.grant_type;
    if (grant !== 'client_credentials') {
      return reply
        .status(400)
        .send({ error: grant === undefined ? 'invalid_request' : 'unsupported_grant_type' });
    }
    const token = randomBytes(32).toString('base64url');
    const nowMs = now().getTime();
    for (const [t, exp] of tokens) if (exp <= nowMs) tokens.delete(t);
    tokens.set(token, nowMs + config.tokenTtlSeconds * 1000);
    return { access_token: token, token_type: 'Bearer', expires_in: config.tokenTtlSeconds, scope: SCOPES };
  });

  type Txid = { Params: { txid: string } };
  type E2e = { Params: { e2eid: string } };
  type Dev = { Params: { e2eid: string; id: string } };
  type Chave = { Params: { chave: string } };

  app.put<Txid>(`${API_BASE}/cob/:txid`, async (request, reply) => {
    const { txid } = request.params;
    if (!txidPattern.test(txid)) {
      const razao = 'O txid deve ter 26 a 35 caracteres de [a-zA-Z0-9].';
      throw new Problem(400, problemType('CobOperacaoInvalida'), 'Cobrança inválida.', razao, [
        { razao, propriedade: 'txid', valor: txid },
      ]);
    }
    const body = parse(cobBody, request.body, 'CobOperacaoInvalida', 'cob');
    return reply.status(201).send(psp.createCob(txid, body));
  });
  app.get<Txid>(`${API_BASE}/cob/:txid`, async (request) => psp.getCob(request.params.txid));
  app.patch<Txid>(`${API_BASE}/cob/:txid`, async (request) => {
    parse(cobPatch, request.body, 'CobOperacaoInvalida', 'cob');
    return psp.removeCob(request.params.txid);
  });

  app.get<E2e>(`${API_BASE}/pix/:e2eid`, async (request) => psp.getPix(request.params.e2eid));
  app.get(`${API_BASE}/pix`, async (request) => {
    const q = parse(pixQuery, request.query, 'PixConsultaInvalida', '');
    const inicio = new Date(q.inicio).getTime();
    const fim = new Date(q.fim).getTime();
    if (fim < inicio) {
      throw new Problem(
        400,
        problemType('PixConsultaInvalida'),
        'Consulta inválida.',
        'fim é anterior a inicio',
      );
    }
    return psp.listPix(inicio, fim, q['paginacao.paginaAtual'], q['paginacao.itensPorPagina'], {
      inicio: q.inicio,
      fim: q.fim,
    });
  });
  app.put<Dev>(`${API_BASE}/pix/:e2eid/devolucao/:id`, async (request, reply) => {
    const { e2eid, id } = request.params;
    if (!/^[a-zA-Z0-9]{1,35}$/.test(id)) {
      const razao = 'O id da devolução deve ter 1 a 35 caracteres de [a-zA-Z0-9].';
      throw new Problem(400, problemType('PixDevolucaoInvalida'), 'Devolução inválida.', razao, [
        { razao, propriedade: 'id' },
      ]);
    }
    const body = parse(devolucaoBody, request.body, 'PixDevolucaoInvalida', 'devolucao');
    return reply.status(201).send(psp.requestDevolucao(e2eid, id, body));
  });
  app.get<Dev>(`${API_BASE}/pix/:e2eid/devolucao/:id`, async (request) =>
    psp.getDevolucao(request.params.e2eid, request.params.id),
  );

  app.put<Chave>(`${API_BASE}/webhook/:chave`, async (request) => {
    const body = parse(webhookBody, request.body, 'WebhookOperacaoInvalida', 'webhook');
    psp.setWebhook(request.params.chave, body.webhookUrl);
    return {};
  });
  app.get<Chave>(`${API_BASE}/webhook/:chave`, async (request) => psp.getWebhook(request.params.chave));
  app.delete<Chave>(`${API_BASE}/webhook/:chave`, async (request, reply) => {
    psp.deleteWebhook(request.params.chave);
    return reply.status(204).send();
  });

  // Every fault route must name a route this app has: a typo would arm a fault nothing takes.
  app.addHook('onReady', async () => {
    for (const pattern of Object.values(API_PIX_FAULT_ROUTES)) {
      const [method, url] = pattern.split(' ') as [string, string];
      if (!app.hasRoute({ method: method as 'GET', url }))
        throw new Error(`fault route ${pattern} has no route`);
    }
  });

  return app;
}
