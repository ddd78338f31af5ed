export {
  createPayoutsClient,
  type PayoutsClient,
  type PayoutsClientOptions,
  type IdempotentCall,
  type CreatePayoutRequest,
  type ListPayoutsQuery,
  type PayoutPage,
  type Quote,
  type CallbackSettings,
  type SetCallbackResult,
  type RotatedSecret,
  type TestCallbackResult,
  type CallbackEventList,
  type CallbackEventItem,
  type CallbackEventsQuery,
} from './client';
export * from './errors';
export type { RetryOptions, CallOptions } from './retry';
export {
  verifyCallback,
  CallbackVerificationError,
  type CallbackEvent,
  type Payout,
} from './verify-callback';
export type { paths, components, operations } from './schema';
