import { z } from 'zod';

/** POST /v1/payouts/{id}/cancel takes no body; the id is matched like GET's (404 for anything unknown). */
export const cancelPayoutParamsSchema = z.object({ id: z.string() });
