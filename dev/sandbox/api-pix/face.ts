import type { Server } from 'node:https';

import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

import type { ApiPixConfig, SandboxConfig } from '../config';
import type { SandboxState } from '../state';
import type { WebhookOptions } from '../webhooks';
import { buildApiPixApp } from './app';
import { loadOrCreateApiPixTls, type ApiPixTls } from './certificates';
import { FaultRegistry } from './faults';
import { createApiPixPsp, type ApiPixPsp } from './psp';
import { createPixPusher } from './webhooks';

export interface ApiPixFace {
  app: FastifyInstance<Server>;
  psp: ApiPixPsp;
  faults: FaultRegistry;
  tls: ApiPixTls;
  /** Certificate files made at this start (none: all were reused). */
  created: string[];
}

export interface ApiPixFaceDeps {
  now?: () => Date;
  /** Retry tuning of the webhook pushes (tests shorten it). */
  webhook?: Partial<Omit<WebhookOptions, 'url' | 'logger'>>;
  /** Window in which Pix to one URL are pushed in one body. Default 200 ms. */
  batchMs?: number;
  /** From a devolução's request to its final status. Default 1 s. */
  devolucaoDelayMs?: number;
}

/**
 * The API Pix face over `state` (shared with the plain face): its certificates, its PSP and its
 * HTTPS app, not yet listening. Give `{ psp, faults }` to buildSandboxApp so the payer and the
 * test controls reach it.
 */
export function createApiPixFace(
  config: SandboxConfig & { apiPix: ApiPixConfig },
  state: SandboxState,
  logger: FastifyBaseLogger,
  deps: ApiPixFaceDeps = {},
): ApiPixFace {
  const now = deps.now ?? (() => new Date());
  const { created, ...tls } = loadOrCreateApiPixTls(config.apiPix.certDir, config.apiPix.serverNames, now());
  const log = logger.child({ face: 'api-pix' });
  const pusher = createPixPusher({
    ...deps.webhook,
    logger: log,
    clientCert: tls.clientCert,
    clientKey: tls.clientKey,
    ca: tls.ca,
    batchMs: deps.batchMs,
  });
  const psp = createApiPixPsp({
    state,
    pixKey: config.pixKey,
    merchantName: config.merchantName,
    merchantCity: config.merchantCity,
    pusher,
    logger: log,
    now,
    devolucaoDelayMs: deps.devolucaoDelayMs,
  });
  const faults = new FaultRegistry();
  const app = buildApiPixApp({ config: config.apiPix, psp, faults, tls, logger: log, now });
  app.addHook('onClose', () => psp.close());
  return { app, psp, faults, tls, created };
}
