export { AllowedUrls } from './allowed-urls.js'
export type {
  FailureReason,
  RefusedToken,
  TokenUsage,
  Verification,
  VerifiedToken,
  VerifyOptions,
} from './answers.js'
export { type Refusal, refusalFor, tokenFrom } from './http.js'
export {
  type MiddlewareOptions,
  type NextFunction,
  sendRefusal,
  verifierMiddleware,
} from './middleware.js'
export { type Outcome, outcomes } from './outcomes.js'
export type { RefusedRow } from './refused-log.js'
export type { ReturnedLease } from './reporter.js'
export { type SseEvent, SseParser } from './sse.js'
export type { OtelApi, OtelSpanOptions, OtelTracer } from './tracing.js'
export { TesseraUnreachableError } from './transport.js'
export type { UsageRow } from './usage.js'
export {
  createVerifier,
  Verifier,
  type VerifierOptions,
  type VerifierStats,
} from './verifier.js'
