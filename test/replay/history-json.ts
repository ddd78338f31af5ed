import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
const HistoryType = temporal.api.history.v1.History;

/**
 * Histories as plain JSON, through the protobuf runtime of @temporalio/proto itself. The SDK's own
 * historyToJSON / historyFromJSON cannot be used in this install: @temporalio/common and
 * @temporalio/proto each carry their own copy of protobufjs, and protojson refuses a Type built by
 * the other copy ("type must be a Type").
 */
export function historyToObject(history: History): Record<string, unknown> {
  return HistoryType.toObject(HistoryType.fromObject(history), {
    longs: String,
    enums: String,
    bytes: String,
  });
}

export function historyFromObject(json: unknown): temporal.api.history.v1.History {
  return HistoryType.fromObject(json as Record<string, unknown>);
}
