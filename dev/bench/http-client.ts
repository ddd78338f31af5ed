import { Agent, request } from 'node:http';

/**
 * The bench's HTTP client: node:http on keep-alive connections. The load runs on the same two cores
 * as the stack it measures, so what the client spends per request is taken from the service; Node's
 * `fetch` (undici behind WHATWG streams) spent about 175 µs of CPU a request here against about 75 µs
 * for node:http, more than the api's own CPU on a closed GET. The Temporal floors' client (gRPC) is
 * in the same process, so POST and GET are measured against their floors on equal terms.
 */
export class BenchHttp {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: Infinity });

  /** One request; the body is JSON if there is one, `undefined` for an empty answer. */
  call(
    method: 'GET' | 'POST',
    url: string,
    headers: Record<string, string>,
    body?: unknown,
  ): Promise<{ status: number; body: unknown; text: string }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          agent: this.agent,
          headers: payload === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('error', reject);
          res.on('end', () => {
            const type = res.headers['content-type'] ?? '';
            let parsed: unknown;
            try {
              parsed = text && type.includes('json') ? JSON.parse(text) : undefined;
            } catch (err) {
              reject(
                new Error(`${method} ${url} answered ${res.statusCode} with invalid JSON: ${String(err)}`),
              );
              return;
            }
            resolve({ status: res.statusCode ?? 0, body: parsed, text });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Closes the idle connections (a bench that ends leaves no socket open). */
  close(): void {
    this.agent.destroy();
  }
}
