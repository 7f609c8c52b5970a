import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import { andThen } from '../../then.js'
import { isoTime } from '../../time.js'
import type { ParsedToken } from '../../tokens/codec.js'
import type { Validation } from '../../tokens/validator.js'
import type { Valid, Verdict } from '../../verification/checkpoint.js'
import type { RequestFacts } from '../../verification/log.js'
import { type HeaderSink, writeLimits } from '../limit-headers.js'
import { jsonType } from './base.js'

/**
 * The `token` object of retrieve (specification 2.5) as JSON, once per verified token string:
 * what a token says never changes, so the answer is two strings joined. Built field by field
 * from the token's payload (nothing else can reach it); the `Validation` schema documents it.
 */
const bodies = new WeakMap<ParsedToken, string>()
function tokenJson(parsed: ParsedToken) {
  let body = bodies.get(parsed)
  if (body === undefined) {
    body = JSON.stringify(buildBody(parsed))
    bodies.set(parsed, body)
  }
  return body
}

function buildBody(parsed: ParsedToken) {
  if (parsed.usage !== 'tk') {
    const { u, a } = parsed.payload
    return { usage: parsed.usage, user: u, authorization: typeof a === 'string' ? a : undefined }
  }
  const { u, exp, iat, scopes, client } = parsed.payload
  return {
    usage: 'tk',
    user: u,
    expires: isoTime(exp * 1000),
    created: isoTime(iat * 1000),
    scopes,
    client,
  }
}

/**
 * Retrieve's answer to a valid token: its limits (their headers go to `sink`), then its body.
 * Shared by the route and the fast path; counted by the checkpoint (valid, or rate_limited).
 */
export function answerValid(
  ctx: AppContext,
  validation: Valid,
  sink: HeaderSink,
  facts?: RequestFacts,
) {
  ctx.metrics.validated(validation)
  const verdict = ctx.checkpoint.admit(validation, undefined, facts)
  if (!(verdict instanceof Promise)) return validBody(validation, sink, verdict)
  return verdict.then((v) => validBody(validation, sink, v))
}

function validBody(validation: Valid, sink: HeaderSink, verdict: Verdict) {
  writeLimits(sink, verdict)
  sink.header('content-type', jsonType)
  return `{"code":"TokenValid","token":${tokenJson(validation.parsed)}}`
}

/**
 * Retrieve's answer to a token that is not valid, or to no token: counted by the checkpoint
 * against the caller's address, then the code and what the token says (422 with no token, and
 * `details` when two different tokens came instead of one).
 */
export function answerInvalid(
  ctx: AppContext,
  validation: Exclude<Validation, Valid> | undefined,
  ip: string | undefined,
  sink: HeaderSink,
  noToken?: string,
  facts?: RequestFacts,
) {
  if (validation !== undefined) ctx.metrics.validated(validation)
  return andThen(ctx.checkpoint.address(validation, ip, undefined, facts), (verdict) => {
    writeLimits(sink, verdict)
    if (validation === undefined) throw new ApiError('accessTokenRequired', noToken)
    sink.header('content-type', jsonType)
    if (validation.code === 'TokenMalformed') return '{"code":"TokenMalformed"}'
    return `{"code":"${validation.code}","token":${tokenJson(validation.parsed)}}`
  })
}

/**
 * Retrieve's answer to what a token's validation says, or to no token (`undefined`, with why
 * as `noToken` when it helps).
 */
export const answerRetrieve = (
  ctx: AppContext,
  validation: Validation | undefined,
  ip: string | undefined,
  sink: HeaderSink,
  noToken?: string,
  facts?: RequestFacts,
) =>
  validation?.code === 'TokenValid'
    ? answerValid(ctx, validation, sink, facts)
    : answerInvalid(ctx, validation, ip, sink, noToken, facts)
