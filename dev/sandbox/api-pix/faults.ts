/** The API Pix face's routes a test can make fail (POST /sandbox/faults on the plain face), to fastify's patterns. */
export const API_PIX_FAULT_ROUTES = {
  'POST /oauth/token': 'POST /oauth/token',
  'PUT /cob/{txid}': 'PUT /api/v2/cob/:txid',
  'GET /cob/{txid}': 'GET /api/v2/cob/:txid',
  'PATCH /cob/{txid}': 'PATCH /api/v2/cob/:txid',
  'GET /pix/{e2eid}': 'GET /api/v2/pix/:e2eid',
  'PUT /pix/{e2eid}/devolucao/{id}': 'PUT /api/v2/pix/:e2eid/devolucao/:id',
  'GET /pix/{e2eid}/devolucao/{id}': 'GET /api/v2/pix/:e2eid/devolucao/:id',
  'PUT /webhook/{chave}': 'PUT /api/v2/webhook/:chave',
  'GET /webhook/{chave}': 'GET /api/v2/webhook/:chave',
  'DELETE /webhook/{chave}': 'DELETE /api/v2/webhook/:chave',
} as const;
export type ApiPixFaultRoute = keyof typeof API_PIX_FAULT_ROUTES;

export interface Fault {
  route: string;
  status: number;
  remaining: number;
}

/**
 * Armed faults by fastify route pattern: the next `remaining` requests to it are answered `status`
 * before anything else is looked at (the token included).
 */
export class FaultRegistry {
  private readonly faults = new Map<string, Fault>();

  arm(pattern: string, fault: Fault): void {
    this.faults.set(pattern, fault);
  }

  /** The fault to answer a request to `pattern` with, counting it; undefined when none is armed. */
  take(pattern: string): Fault | undefined {
    const fault = this.faults.get(pattern);
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.faults.delete(pattern);
    return fault;
  }

  list(): Fault[] {
    return [...this.faults.values()].map((f) => ({ ...f }));
  }

  clear(): number {
    const n = this.faults.size;
    this.faults.clear();
    return n;
  }
}
