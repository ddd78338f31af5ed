import { z } from 'zod';

/**
 * The parts of BCB's API Pix (bacen/pix-api, release 2.x) answers the service reads, validated before
 * anything is used. Fields the service does not read are let through untouched.
 */

/** RFC 3339 with an offset, as the API Pix document's `date-time` fields are. */
const dateTime = z.iso.datetime({ offset: true });
/** API Pix amounts: `\d{1,10}\.\d{2}`. */
export const valorSchema = z.string().regex(/^\d{1,10}\.\d{2}$/, 'an amount with 2 decimals');
/** `E` or `D` + ISPB (8) + yyyyMMddHHmm + 11 characters: 32 letters and digits. */
export const endToEndIdSchema = z.string().regex(/^[a-zA-Z0-9]{32}$/, 'a 32-character endToEndId');

export const COB_STATUSES = [
  'ATIVA',
  'CONCLUIDA',
  'REMOVIDA_PELO_USUARIO_RECEBEDOR',
  'REMOVIDA_PELO_PSP',
] as const;

/**
 * A return of a received Pix as listed under it (devolução): ours, or one the payer's bank obtained
 * (MED). Only what says whether the payer is getting the payment back is read.
 */
const listedDevolucaoSchema = z.object({
  id: z.string().max(35),
  valor: valorSchema,
  status: z.enum(['EM_PROCESSAMENTO', 'DEVOLVIDO', 'NAO_REALIZADO']),
});

export const pixSchema = z.object({
  endToEndId: endToEndIdSchema,
  txid: z.string().max(35).optional(),
  valor: valorSchema,
  chave: z.string().max(77).optional(),
  horario: dateTime,
  devolucoes: z.array(listedDevolucaoSchema).max(100).optional(),
});

export const cobSchema = z.object({
  calendario: z.object({ criacao: dateTime, expiracao: z.number().int().positive() }),
  txid: z.string().regex(/^[a-zA-Z0-9]{26,35}$/),
  revisao: z.number().int().nonnegative(),
  status: z.enum(COB_STATUSES),
  valor: z.object({ original: valorSchema }),
  chave: z.string().min(1).max(77),
  pixCopiaECola: z.string().min(20).max(512).optional(),
  pix: z.array(pixSchema).max(1000).optional(),
});
export type Cob = z.infer<typeof cobSchema>;

export const webhookSchema = z.object({
  webhookUrl: z.string().min(1).max(2048),
  // WebhookCompleto requires webhookUrl, cnpj and criacao; some institutions also echo the key.
  chave: z.string().min(1).max(77).optional(),
  criacao: dateTime.optional(),
});

/** A devolução (PUT and GET /pix/{e2eid}/devolucao/{id}). */
export const devolucaoSchema = z.object({
  id: z.string().regex(/^[a-zA-Z0-9]{1,35}$/),
  rtrId: endToEndIdSchema,
  valor: valorSchema,
  status: z.enum(['EM_PROCESSAMENTO', 'DEVOLVIDO', 'NAO_REALIZADO']),
  motivo: z.string().max(2000).optional(),
});
