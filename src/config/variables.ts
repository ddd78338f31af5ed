import { API_VARIABLES } from './api-process';
import { API_PIX_VARIABLES } from './api-pix';
import { CALLBACK_VARIABLES } from './callbacks';
import { CHAIN_VARIABLES } from './chain';
import { PROVIDER_VARIABLES } from './provider';
import { QUOTE_VARIABLES } from './quote';
import { SHARED_VARIABLES } from './shared';
import { WORKER_VARIABLES } from './worker-process';

/** Every variable of the service's processes, each defined once, in the module of its concern. */
export const VARIABLES = {
  ...SHARED_VARIABLES,
  ...API_VARIABLES,
  ...QUOTE_VARIABLES,
  ...WORKER_VARIABLES,
  ...CHAIN_VARIABLES,
  ...PROVIDER_VARIABLES,
  ...API_PIX_VARIABLES,
  ...CALLBACK_VARIABLES,
};

export type Variable = keyof typeof VARIABLES;

/** Every variable some process reads (docker-compose.yml is checked against it). */
export const CONFIG_KEYS: readonly string[] = Object.keys(VARIABLES);
