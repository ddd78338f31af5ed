import { z } from 'zod';

/** The kinds of value the variables are made of, and what a rule across variables reports. */

export const decimalString = z.string().regex(/^\d+(\.\d+)?$/, 'must be a non-negative decimal number');
export const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);
export const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0'])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');
export const hex = z.string().regex(/^0x[0-9a-fA-F]+$/, 'must be 0x-prefixed hex');
export const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address');

export const optional = <T extends z.ZodTypeAny>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

/** A problem a rule across variables finds, reported against the variable `path` names. */
export type ConfigIssue = {
  code: 'custom';
  path: string[];
  message: string;
};

/**
 * A rule across variables, in the module of the variables it is about. `reads` is what the process
 * reads: a rule checks only variables the process reads, so one process's setting never stops another.
 */
export type ConfigRule = (env: Record<string, unknown>, reads: ReadonlySet<string>) => ConfigIssue[];
