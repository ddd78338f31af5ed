import { createPublicClient, formatUnits, http, parseUnits, type Address } from 'viem';
import { AGGREGATOR_V3_ABI } from '../../src/adapters/rates/price-feeds';
import { ownerCall } from './screening-lists';

// The owner's side of the local price feeds (contracts/TestPriceFeed.sol), as Chainlink's oracle
// network is on a real one: a new answer now, or a round written as given (a past time makes the
// feed stale, a future one wrong). Used by `npm run local:feeds`, the launcher and the tests.

/** A new round with `answer` (in the feed's units, e.g. 18000000 for 0.18 at 8 decimals) at the block's time. */
export const setFeedAnswer = (rpcUrl: string, feed: Address, answer: bigint) =>
  ownerCall(rpcUrl, 'TestPriceFeed', feed, 'updateAnswer', [answer]);

/** A new round written as given: `updatedAt` (Unix seconds) may be in the past, 0 or in the future. */
export async function setFeedRound(
  rpcUrl: string,
  feed: Address,
  round: { answer: bigint; updatedAt: bigint },
): Promise<void> {
  const { roundId } = await feedStatus(rpcUrl, feed);
  await ownerCall(rpcUrl, 'TestPriceFeed', feed, 'updateRoundData', [
    roundId + 1n,
    round.answer,
    round.updatedAt,
    round.updatedAt,
  ]);
}

/** The latest answer again, as last updated `ageSeconds` ago by this machine's clock (the api's). */
export async function makeFeedStale(rpcUrl: string, feed: Address, ageSeconds: number): Promise<void> {
  const { answer } = await feedStatus(rpcUrl, feed);
  const updatedAt = BigInt(Math.floor(Date.now() / 1000) - ageSeconds);
  await setFeedRound(rpcUrl, feed, { answer, updatedAt });
}

/** The latest answer again, now: what the feed's heartbeat does. */
export async function refreshFeed(rpcUrl: string, feed: Address): Promise<void> {
  await setFeedAnswer(rpcUrl, feed, (await feedStatus(rpcUrl, feed)).answer);
}

export interface FeedStatus {
  roundId: bigint;
  answer: bigint;
  decimals: number;
  /** Unix seconds. */
  updatedAt: bigint;
}

/** The feed's latest round, read as the service reads it. */
export async function feedStatus(rpcUrl: string, feed: Address): Promise<FeedStatus> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  const [decimals, [roundId, answer, , updatedAt]] = await Promise.all([
    client.readContract({ address: feed, abi: AGGREGATOR_V3_ABI, functionName: 'decimals' }),
    client.readContract({ address: feed, abi: AGGREGATOR_V3_ABI, functionName: 'latestRoundData' }),
  ]);
  return { roundId, answer, decimals, updatedAt };
}

/** A decimal text ("0.18") in a feed's units, exactly (viem parses the text, no float). */
export const feedUnits = (text: string, decimals: number): bigint => parseUnits(text, decimals);

/** One line for a person: the answer as a decimal and its age. */
export function describeFeed(name: string, address: Address, s: FeedStatus): string {
  const age = Math.floor(Date.now() / 1000) - Number(s.updatedAt);
  return `${name} ${address}: ${formatUnits(s.answer, s.decimals)} (round ${s.roundId}, updated ${age} s ago)`;
}
