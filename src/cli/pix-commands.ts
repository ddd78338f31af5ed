import { str, UsageError, type Commands } from './command';

/** `pix webhook …`: the service's webhook at the API Pix institution (PIX_PROVIDER=bcb-api-pix). */

export const PIX_COMMANDS: Commands = {
  'pix webhook set': {
    uses: 'api-pix',
    args: '[--url <https_url>]',
    summary: "register the service's webhook URL for the receiver key at the API Pix institution",
    details:
      'Default URL: PUBLIC_BASE_URL + /webhooks/ + PROVIDER_NAME. The institution appends /pix and POSTs\n' +
      'every Pix received on the receiver key there. Prints {"webhook_url", "registered_at"} as the\n' +
      'institution then shows it. Repeating it replaces the URL.',
    options: { url: str },
    plan(values) {
      const given = typeof values.url === 'string' ? values.url : undefined;
      if (given !== undefined && !/^https?:\/\/[^\s]+$/.test(given)) {
        throw new UsageError('--url must be an http(s) URL');
      }
      return async ({ webhooks, defaultWebhookUrl }) => {
        // The institution appends /pix: a trailing slash would make it `//pix`, a route nobody serves.
        const url = (given ?? defaultWebhookUrl)?.replace(/\/+$/, '');
        if (url === undefined) throw new UsageError('--url is required when PUBLIC_BASE_URL is not set');
        const { protocol, hostname } = new URL(url);
        if (protocol !== 'https:' && !['127.0.0.1', 'localhost', '[::1]'].includes(hostname)) {
          throw new UsageError('--url must be https: institutions call webhooks over mutual TLS only');
        }
        await webhooks.registerWebhook(url);
        const shown = await webhooks.getWebhook();
        if (shown === null) throw new Error('the institution shows no webhook after registering it');
        return { webhook_url: shown.url, registered_at: shown.registeredAt ?? null };
      };
    },
  },
  'pix webhook show': {
    uses: 'api-pix',
    args: '',
    summary: 'show the webhook URL the API Pix institution calls for the receiver key',
    details: 'Prints {"webhook_url", "registered_at"}, both null when none is registered.',
    options: {},
    plan() {
      return async ({ webhooks }) => {
        const shown = await webhooks.getWebhook();
        return { webhook_url: shown?.url ?? null, registered_at: shown?.registeredAt ?? null };
      };
    },
  },
};
