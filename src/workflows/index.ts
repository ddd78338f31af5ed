// Entry point of the workflow bundle: every workflow type the worker registers.
export { payoutWorkflow } from './payout.workflow';
export { providerEventWorkflow } from './provider-event.workflow';
export { callbackDeliveryWorkflow } from './callback.workflow';
export { refundWorkflow } from './refund.workflow';
