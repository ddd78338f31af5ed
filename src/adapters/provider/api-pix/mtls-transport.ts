import https from 'node:https';

/** Client certificate, its key and the CA that signed the institution's server certificate, as PEM. */
export interface MtlsCredentials {
  cert: string | Buffer;
  key: string | Buffer;
  /** Omitted: the system's trusted CAs (a real institution's server certificate is publicly signed). */
  ca?: string | Buffer;
}

export interface HttpsRequest {
  method: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface HttpsAnswer {
  status: number;
  text: string;
}

export type HttpsTransport = (req: HttpsRequest) => Promise<HttpsAnswer>;

/** Raised when no full answer came within the timeout (connect, TLS, headers and body together). */
export class TransportTimeout extends Error {
  override readonly name = 'TimeoutError';
}

/** Bodies of API Pix answers are small; anything larger is not an answer we can use. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * HTTPS with a client certificate, as every API Pix institution demands (mutual TLS). One keep-alive
 * agent per client, so the TLS handshake is paid once per connection, not once per call. Redirects
 * are never followed (a 3xx is returned as is), so neither the token nor the certificate is ever
 * presented to a host other than the configured one.
 */
export function createMtlsTransport(credentials: MtlsCredentials, timeoutMs: number): HttpsTransport {
  const agent = new https.Agent({
    keepAlive: true,
    cert: credentials.cert,
    key: credentials.key,
    ...(credentials.ca !== undefined && { ca: credentials.ca }),
    // TLS 1.2 is the floor BCB's security manual sets for API Pix.
    minVersion: 'TLSv1.2',
  });
  return (req) =>
    new Promise<HttpsAnswer>((resolve, reject) => {
      const request = https.request(req.url, {
        method: req.method,
        headers: {
          ...req.headers,
          ...(req.body !== undefined && { 'content-length': String(Buffer.byteLength(req.body)) }),
        },
        agent,
      });
      const timer = setTimeout(
        () => request.destroy(new TransportTimeout(`no answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      request.on('error', fail);
      request.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) request.destroy(new Error('answer too large'));
          else chunks.push(chunk);
        });
        res.on('error', fail);
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
      request.end(req.body);
    });
}
