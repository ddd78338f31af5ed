import type { Config } from '../../config';
import type { Metrics } from '../../observability/metrics';
import { createHttpProvider } from './http-provider';
import type { PaymentProvider } from './types';

/** The provider client as the api and the worker run it: configured, with its calls measured. */
export function createConfiguredProvider(
  config: Pick<Config, 'PROVIDER_API_URL' | 'PROVIDER_API_KEY' | 'PROVIDER_TIMEOUT_MS'>,
  metrics: Metrics,
): PaymentProvider {
  return createHttpProvider({
    baseUrl: config.PROVIDER_API_URL,
    apiKey: config.PROVIDER_API_KEY,
    timeoutMs: config.PROVIDER_TIMEOUT_MS,
    onCall: (m) =>
      metrics.providerCallDuration.observe(
        { operation: m.operation, outcome: m.outcome },
        m.durationMs / 1000,
      ),
  });
}
