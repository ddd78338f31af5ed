import type { AttentionKind } from '../../domain/attention';
import type { PayoutRecord } from '../../domain/payout';
import type { ProviderSettlementKnowledge } from '../../domain/provider-settlement-knowledge';
import type { InboxState } from './payment-inbox';
import type { TreasuryBook } from './treasury-settlement';

/**
 * What a payout run that waited long hands to its next run (src/workflows/hand-over.ts): the payout
 * as it stands, what its inbox and attention list hold, and where its settlement is. The next run
 * settles from here; it does not open, charge or screen again.
 */
export interface PayoutHandOver {
  record: PayoutRecord;
  /** When the settlement began (workflow time): its overdue alert counts from there. */
  settlingSince: number;
  /** The overdue alert went out: the next run does not send it again. */
  overdueAlerted: boolean;
  inbox: InboxState;
  attention: AttentionKind[];
  settlement:
    | { mode: 'provider'; released: boolean; knowledge: ProviderSettlementKnowledge }
    | { mode: 'treasury'; book: TreasuryBook };
}
