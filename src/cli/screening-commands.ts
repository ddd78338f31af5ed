import { allowWallet, denyWallet, listDeniedWallets } from '../adapters/db/screening-denylist-repo';
import { receiverWalletError } from '../domain/wallet';
import { requireOption, str, UsageError, type Commands, type Values } from './command';

/** `screening …`: the operators' denylist of receiver wallets. */

export const SCREENING_COMMANDS: Commands = {
  'screening list': {
    args: '',
    summary: "list the operators' denylist of receiver wallets",
    details:
      'Prints {"denylist": [{"wallet", "reason", "added_by", "added_at"}]}. A wallet here is refused at POST\n' +
      '(422 "receiver_wallet failed compliance screening") and not paid by a payout that reaches settlement.',
    options: {},
    plan: () => async (db) => ({
      denylist: (await listDeniedWallets(db)).map((e) => ({
        wallet: e.wallet,
        reason: e.reason,
        added_by: e.addedBy,
        added_at: e.addedAt,
      })),
    }),
  },
  'screening deny': {
    args: '--wallet <0x..> --by <who> --reason <why>',
    summary: "add a receiver wallet to the operators' denylist",
    details:
      'From the next screening on (POST may reuse a verdict for SCREENING_CACHE_SECONDS), POSTs for it answer\n' +
      '422, and payouts paying it that have not yet requested or signed their USDT wait for a decision\n' +
      '(payouts resolve). Who, when and why are kept with every change.',
    options: { wallet: str, by: str, reason: str },
    plan(values) {
      const change = denylistChange(values);
      return async (db) => {
        await denyWallet(db, change);
        return { wallet: change.wallet.toLowerCase(), denied: true };
      };
    },
  },
  'screening allow': {
    args: '--wallet <0x..> --by <who> --reason <why>',
    summary: "remove a receiver wallet from the operators' denylist",
    details:
      'Who and why are kept. Payouts already waiting on it are still decided one by one (payouts resolve).',
    options: { wallet: str, by: str, reason: str },
    plan(values) {
      const change = denylistChange(values);
      return async (db) => {
        const removed = await allowWallet(db, change);
        if (!removed) throw new Error(`wallet ${change.wallet} is not on the denylist`);
        return { wallet: change.wallet.toLowerCase(), denied: false };
      };
    },
  },
};

/** A denylist change's options: the wallet, who changes it and why. */
function denylistChange(values: Values): { wallet: string; by: string; reason: string } {
  const wallet = requireOption(values, 'wallet');
  const problem = receiverWalletError(wallet);
  if (problem) throw new UsageError(`--wallet: ${problem.replace('receiver_wallet ', '')}`);
  const by = requireOption(values, 'by');
  const reason = requireOption(values, 'reason');
  if (reason.length > 2000) throw new UsageError('--reason must be at most 2000 characters');
  return { wallet, by, reason };
}
