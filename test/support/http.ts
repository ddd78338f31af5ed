/** What a test needs of a response: status, headers, raw text and the parsed JSON (if it is JSON). */
export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/** The JSON a text holds, or undefined when it holds none. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A fetch answer, read whole. */
export async function readResponse(res: Response): Promise<ApiResponse> {
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: parseJson(text) };
}

/** A request to the api, its answer read whole. */
export async function call(
  baseUrl: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<ApiResponse> {
  return readResponse(
    await fetch(`${baseUrl}${path}`, {
      method: init.method ?? 'GET',
      headers: init.headers,
      body: init.body,
    }),
  );
}

/** POST /v1/payouts with a JSON body (a string is sent as is). */
export function post(
  baseUrl: string,
  apiKey: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  return call(baseUrl, '/v1/payouts', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}
