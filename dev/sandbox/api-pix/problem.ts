/** An API Pix error (the spec's Problema), also how the payer's bank is refused. */
export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly title: string,
    detail: string,
    readonly violacoes?: { razao: string; propriedade: string; valor?: string }[],
  ) {
    super(detail);
  }
}

const ERROR_TYPE_BASE = 'https://pix.bcb.gov.br/api/v2/error/';
export const problemType = (name: string) => `${ERROR_TYPE_BASE}${name}`;
