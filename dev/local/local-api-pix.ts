import { loadWorkerConfig } from '../../src/config';
import { apiPixProviderOf } from '../../src/main/wiring';

/**
 * Registers the api's webhook at the sandbox's API Pix face, as `admin pix webhook set` does at a real
 * institution. Retried while the face starts: its certificates may not be written yet, or it may not
 * listen yet.
 */
export async function registerLocalPixWebhook(env: NodeJS.ProcessEnv, url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await apiPixProviderOf(loadWorkerConfig(env)).registerWebhook(url);
      return;
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(
          `the API Pix sandbox did not take the webhook registration: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
